import ArgumentParser

/// The workloads of issue 6's table, by name.
enum WorkloadName: String, CaseIterable, ExpressibleByArgument {
    /// 1: capture overhead against an untracked table.
    case capture
    /// 2–4: export, import and bytes against the session extension.
    case changeset
    /// 5: peak memory exporting and importing, at two sizes.
    case memory
    /// 6: replicas syncing through one folder against raw imports.
    case folder
    /// 7 and 8: a small import into a store with long history; prune and store size.
    case history
    /// Adding a column to a tracked table of N rows (--rows) against the same on an untracked one.
    case schema
    /// One-row write transactions (--operations) through the app's pool, store attached or by path.
    case appwriter
    /// Export and import of --changes changes with the group's encryption on, against it off.
    case encryption
    /// Push and pull of --changes changes through a WebDAV server (Apache, loopback) against a folder.
    case webdav
    /// Groups of --fanout replicas syncing through one folder: bytes per unique byte, time per replica.
    case fanout
    /// A new replica catching up on --rows rows from a snapshot, against `sqlite3changeset_apply`.
    case join
}

/// The command-line settings, resolved against `--quick` (explicit values win).
struct BenchOptions: ParsableArguments {
    @Option(
        name: .customLong("workload"),
        help:
            "Run only these workloads (repeatable): \(WorkloadName.allCases.map(\.rawValue).joined(separator: ", ")). Default: all."
    )
    var workloadArguments: [WorkloadName] = []

    @Option(
        name: .customLong("rows"),
        help:
            "Capture: rows inserted, updated and deleted, N; schema and join: rows in the table (default 1000000; 5000 with --quick)."
    )
    var rowsArgument: Int?

    @Option(
        name: .customLong("batch"),
        help: "Capture: rows per transaction in the batched phases (default 10000, capped at N).")
    var batchArgument: Int = 10_000

    @Option(
        name: .customLong("repetitions"),
        help: "Measured repetitions, R, after one discarded warm-up (default 5; 2 with --quick).")
    var repetitionsArgument: Int?

    @Option(
        name: .customLong("changes"),
        help: "Changeset: changes exported and imported (default 1000000; 10000 with --quick).")
    var changesArgument: Int?

    @Option(
        name: .customLong("memory-changes"),
        help:
            "Memory: change counts to export and import in child processes (repeatable; default 1000000 and 10000000; 10000 and 50000 with --quick)."
    )
    var memoryChangesArguments: [Int] = []

    @Option(name: .customLong("replicas"), help: "Folder: replicas (default 20; 3 with --quick).")
    var replicasArgument: Int?

    @Option(name: .customLong("operations"), help: "Folder: operations per replica (default 10000; 300 with --quick).")
    var operationsArgument: Int?

    @Option(
        name: .customLong("transactions"),
        help: "History: one-row transactions in the large store (default 1000000; 5000 with --quick).")
    var transactionsArgument: Int?

    @Option(
        name: .customLong("fanout"),
        help: "Fanout: group sizes (repeatable; default 4, 8, 16 and 32; 3 and 4 with --quick).")
    var fanoutArguments: [Int] = []

    @Option(
        name: .customLong("fanout-rows"), help: "Fanout: rows each replica inserts (default 500; 50 with --quick).")
    var fanoutRowsArgument: Int?

    @Option(help: "Folder: the seed of the random operations.")
    var seed: UInt64 = 20_261_122

    @Flag(help: "A small run that keeps the tool working in CI; not for judging timings.")
    var quick = false

    @Flag(help: "Print one JSON object per metric and line; the run header goes to standard error.")
    var json = false

    @Option(
        name: .customLong("json-output"),
        help: "Also write the JSON lines to this file (the table still goes to standard output).")
    var jsonOutput: String?

    func validate() throws {
        for (name, value) in [
            ("--rows", rowsArgument), ("--repetitions", repetitionsArgument), ("--changes", changesArgument),
            ("--replicas", replicasArgument), ("--operations", operationsArgument),
            ("--transactions", transactionsArgument), ("--fanout-rows", fanoutRowsArgument),
        ] {
            if let value, value < 1 { throw ValidationError("\(name) must be at least 1.") }
        }
        if batchArgument < 1 { throw ValidationError("--batch must be at least 1.") }
        if changes < 4 { throw ValidationError("--changes must be at least 4.") }
        if replicas < 2 { throw ValidationError("--replicas must be at least 2.") }
        if fanoutArguments.contains(where: { $0 < 2 }) { throw ValidationError("--fanout must be at least 2.") }
        if memoryChangesArguments.contains(where: { $0 < 1 }) {
            throw ValidationError("--memory-changes must be at least 1.")
        }
    }

    var workloads: [WorkloadName] { workloadArguments.isEmpty ? WorkloadName.allCases : workloadArguments }
    /// N: rows inserted, updated and deleted by the capture workloads.
    var rows: Int { rowsArgument ?? (quick ? 5_000 : 1_000_000) }
    /// B: rows per transaction in the batched capture workloads.
    var batch: Int { min(batchArgument, rows) }
    var changes: Int { changesArgument ?? (quick ? 10_000 : 1_000_000) }
    var memoryChanges: [Int] {
        memoryChangesArguments.isEmpty ? (quick ? [10_000, 50_000] : [1_000_000, 10_000_000]) : memoryChangesArguments
    }
    var replicas: Int { replicasArgument ?? (quick ? 3 : 20) }
    var operations: Int { operationsArgument ?? (quick ? 300 : 10_000) }
    var transactions: Int { transactionsArgument ?? (quick ? 5_000 : 1_000_000) }
    var fanout: [Int] { fanoutArguments.isEmpty ? (quick ? [3, 4] : [4, 8, 16, 32]) : fanoutArguments }
    var fanoutRows: Int { fanoutRowsArgument ?? (quick ? 50 : 500) }
    /// R: measured repetitions.
    var repetitions: Int { repetitionsArgument ?? (quick ? 2 : 5) }
}
