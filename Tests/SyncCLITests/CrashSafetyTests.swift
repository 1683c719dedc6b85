import Foundation
import Testing
import TidemarkTestSupport

/// A short run of the crash harness (`tools/CrashHarness`): `sync exec`, `import`, `push`, `pull`
/// and `prune` are SIGKILLed at random moments; after each kill the store must pass
/// `integrity_check`, hold every write transaction wholly or not at all, keep gap-free unique
/// history sequences and every acknowledged write, the exchange folder must hold no partial file
/// under a final name, the rerun must complete, and at the end the replicas must converge.
/// `swift run -c release tidemark-crash --trials 500` is the long run.
@Suite struct CrashSafetyTests {
    /// Trials in this short run: five rounds of the five commands.
    static let trials = 25

    // A hang guard, not a timing check: the limit counts from when the test is started, and the
    // rest of the suite runs beside it on two cores. 15 minutes, as the other hang guards allow.
    @Test(.timeLimit(.minutes(15)))
    func syncCommandsKilledAtRandomMomentsLeaveEverythingSound() async throws {
        let seed = SeededGenerator.seed(environment: "TIDEMARK_CRASH_SEED")
        print("CrashSafetyTests: seed \(seed) (replay with TIDEMARK_CRASH_SEED=\(seed))")
        let harness = SyncProcess.productsDirectory + "/tidemark-crash"
        let started = ContinuousClock.now
        let result = try await CommandRunner.run(
            harness, ["--seed", "\(seed)", "--trials", "\(Self.trials)", "--sync", SyncProcess.path, "--quiet"],
            environment: SyncProcess.environment())
        print("CrashSafetyTests: \(Self.trials) trials took \(ContinuousClock.now - started)\n\(result.stdout)")

        #expect(result.exitCode == 0, "seed \(seed): \(result)")
        #expect(result.stdout.contains("ok  no failures"), "seed \(seed): \(result)")
        #expect(result.stdout.contains("convergence: all replicas hold the same rows"), "seed \(seed): \(result)")

        // The run was not vacuous: every command was interrupted in its share of trials, and most
        // kills reached a command that was still running.
        let table = Self.summaryTable(result.stdout)
        for command in ["exec", "import", "push", "pull", "prune"] {
            #expect(table[command]?.trials == Self.trials / 5, "\(command): \(result.stdout)")
        }
        let total = try #require(table["total"], "no summary in: \(result)")
        #expect(total.trials == Self.trials)
        #expect(total.killedMidCommand >= Self.trials / 3, "too few kills landed mid-command: \(result.stdout)")
    }

    /// Found by the harness (seed 2, no kill needed): a replica that held some of a peer's history
    /// and then caught up from that peer's snapshot kept those old transactions below its new pruned
    /// point, so its history showed the peer's #1 and then a gap; `prune --dry-run` counted them
    /// and `prune` never removed them.
    @Test func catchingUpFromASnapshotLeavesNoHistoryBelowThePrunedPoint() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        let c = try await CLIStore(replica: "c")
        try await CLIStore.trustEachOther([(a, "a"), (b, "b"), (c, "c")])
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        func run(_ store: CLIStore, _ arguments: String...) async throws {
            let result = try await SyncProcess.run(arguments + ["--store", store.path])
            try #require(result.exitCode == 0 && result.stderr.isEmpty, "\(arguments): \(result)")
        }

        // c receives a's first write, then stops syncing and is retired.
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        try await run(a, "push", "--to", exchange.path)
        try await run(c, "pull", "--from", exchange.path, "--no-prune")
        try await run(a, "peers", "retire", "c")
        // a writes more; b applies it; a prunes its bundles away and leaves a snapshot.
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        try await run(a, "push", "--to", exchange.path)
        try await run(b, "pull", "--from", exchange.path, "--no-prune")
        try await run(a, "pull", "--from", exchange.path)
        // c comes back and catches up from a's snapshot.
        let back = try await SyncProcess.run(["pull", "--store", c.path, "--from", exchange.path, "--no-prune"])
        try #require(back.exitCode == 0 && back.stdout.contains("caught up from a's snapshot"), "\(back)")

        let aID = try await a.id().description
        let held = try await c.log().filter { $0.replica == aID }.map(\.seq)
        #expect(held.isEmpty, "c still holds a's transactions \(held) below the snapshot's pruned point")
        let dryRun = try await c.sync("prune", "--dry-run")
        #expect(dryRun.exitCode == 0 && !dryRun.stdout.contains("would remove 1 "), "\(dryRun)")
        #expect(try await SQLiteShell.execute(c.path, "SELECT id FROM items ORDER BY id") == "a-1\na-2\n")
    }

    /// One row of the harness's summary table.
    struct Row {
        var trials: Int
        var killedMidCommand: Int
    }

    /// The summary table's rows (`  exec  5  4  1  1`), by command name and `total`.
    static func summaryTable(_ stdout: String) -> [String: Row] {
        var rows: [String: Row] = [:]
        for line in stdout.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 5, let numbers = Optional(fields.dropFirst().compactMap { Int($0) }),
                numbers.count == 4
            else { continue }
            rows[String(fields[0])] = Row(trials: numbers[0], killedMidCommand: numbers[1])
        }
        return rows
    }
}
