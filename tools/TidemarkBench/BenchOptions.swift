import ArgumentParser

/// The command-line settings, resolved against `--quick` (explicit values win).
struct BenchOptions: ParsableArguments {
    @Option(name: .customLong("rows"), help: "Rows per workload, N (default 100000; 10000 with --quick).")
    var rowsArgument: Int?

    @Option(name: .customLong("batch"), help: "Rows per transaction in the batched workloads, B (capped at N).")
    var batchArgument: Int = 1_000

    @Option(
        name: .customLong("repetitions"),
        help: "Measured repetitions, R, after one discarded warm-up (default 5; 2 with --quick).")
    var repetitionsArgument: Int?

    @Option(name: .customLong("changes"), help: "Changes in the bundle workload (default 1000000; 20000 with --quick; 0 skips it).")
    var changesArgument: Int?

    @Flag(help: "A small run that keeps the tool working in CI; not for judging timings.")
    var quick = false

    @Flag(help: "Print one JSON object per metric and line; the run header goes to standard error.")
    var json = false

    func validate() throws {
        if let rowsArgument, rowsArgument < 1 { throw ValidationError("--rows must be at least 1.") }
        if batchArgument < 1 { throw ValidationError("--batch must be at least 1.") }
        if let repetitionsArgument, repetitionsArgument < 1 { throw ValidationError("--repetitions must be at least 1.") }
    }

    /// N: rows inserted, updated and deleted by each workload.
    var rows: Int { rowsArgument ?? (quick ? 10_000 : 100_000) }
    /// B: rows per transaction in the batched workloads.
    var batch: Int { min(batchArgument, rows) }
    /// Changes exported and imported by the bundle workload.
    var changes: Int { changesArgument ?? (quick ? 20_000 : 1_000_000) }
    /// R: measured repetitions.
    var repetitions: Int { repetitionsArgument ?? (quick ? 2 : 5) }
}
