import Foundation
import Testing
import TidemarkTestSupport

/// Several processes writing one store at the same time.
@Suite struct ConcurrencyTests {
    /// A shell loop running `sync exec` COUNT times, counting failures into its exit status.
    static let loop = """
        fails=0
        i=1
        while [ "$i" -le "$COUNT" ]; do
          "$SYNC" exec --store "$STORE" --author "$WHO" "INSERT INTO items(id, qty) VALUES ('$WHO-$i', $i)" || fails=$((fails + 1))
          i=$((i + 1))
        done
        exit "$fails"
        """

    @Test func twoProcessesExecutingAtOnceAllSucceedWithGapFreeSequences() async throws {
        let store = try await CLIStore()
        let perProcess = 200
        func run(_ who: String) async throws -> CommandResult {
            try await CommandRunner.run(
                "/bin/sh", ["-c", Self.loop],
                environment: SyncProcess.environment([
                    "SYNC": SyncProcess.path, "STORE": store.path, "WHO": who, "COUNT": "\(perProcess)",
                ]))
        }
        let started = ContinuousClock.now
        async let first = run("p1")
        async let second = run("p2")
        let results = try await [first, second]
        print("ConcurrencyTests: \(2 * perProcess) concurrent sync exec took \(ContinuousClock.now - started)")

        for (who, result) in zip(["p1", "p2"], results) {
            #expect(result.exitCode == 0, "\(who) had \(result.exitCode) failed exec(s): \(result)")
            #expect(!result.stderr.contains("locked"), "\(who): \(result)")
            #expect(result.stderr.isEmpty, "\(who): \(result)")
        }

        let log = try await store.log()
        #expect(log.count == 2 * perProcess)
        #expect(log.map(\.seq) == (1...Int64(2 * perProcess)).map { $0 })
        #expect(Set(log.map(\.token)).count == log.count)
        #expect(zip(log, log.dropFirst()).allSatisfy { $0.hlc < $1.hlc })
        for who in ["p1", "p2"] {
            let own = log.filter { $0.author == who }
            #expect(own.count == perProcess, "\(who)")
            // Each process's inserts were recorded in the order it made them, one per transaction.
            let keys = own.map { $0.changes.map { $0.key["id"] } }
            #expect(keys == (1...perProcess).map { [.text("\(who)-\($0)")] }, "\(who)")
        }
        let switches = zip(log, log.dropFirst()).filter { $0.author != $1.author }.count
        print("ConcurrencyTests: the log switches between the two writers \(switches) times")

        let status = try await store.status()
        #expect((status["history"] as? [String: Any])?["transactions"] as? Int == 2 * perProcess)
        #expect(
            try await SQLiteShell.execute(store.path, "SELECT count(*), count(DISTINCT id) FROM items") == "400|400\n")
    }
}

/// Four writers — two `sync exec` loops and two `sqlite3` shell loops — on one store while a fifth
/// process pushes, pulls and prunes between two replicas.
@Suite struct WritersAndSyncLoopConcurrencyTests {
    /// A shell loop inserting COUNT rows `WHO-1`, `WHO-2`, … through the `sqlite3` shell, one
    /// transaction each, with the busy timeout a real client sets; failures counted into its exit status.
    static let shellLoop = """
        fails=0
        i=1
        while [ "$i" -le "$COUNT" ]; do
          "$SQLITE" -cmd ".timeout 5000" "$STORE" "INSERT INTO items(id, qty) VALUES ('$WHO-$i', $i)" || fails=$((fails + 1))
          sleep 0.01
          i=$((i + 1))
        done
        exit "$fails"
        """

    /// Until the file DONE exists: A pushes, B pulls (keeping its history), A pulls (reading B's
    /// watermark, which lets it prune) and A prunes. Prints the number of rounds; failures counted.
    static let syncLoop = """
        fails=0
        rounds=0
        while [ ! -e "$DONE" ] || [ "$rounds" -lt 2 ]; do
          "$SYNC" push --store "$A" --to "$FOLDER" || fails=$((fails + 1))
          "$SYNC" pull --store "$B" --from "$FOLDER" --no-prune || fails=$((fails + 1))
          "$SYNC" pull --store "$A" --from "$FOLDER" || fails=$((fails + 1))
          "$SYNC" prune --store "$A" || fails=$((fails + 1))
          rounds=$((rounds + 1))
        done
        echo "rounds $rounds"
        exit "$fails"
        """

    // A hang guard, not a timing check: alone this takes seconds, but the whole suite runs beside
    // it on two cores, and the limit counts from when the test is started, not from when a thread
    // first runs it (a run measured 82 s of work in a test that failed its 5-minute limit after
    // 447 s). 15 minutes, as MigrateCrashTests allows.
    @Test(.timeLimit(.minutes(15)))
    func fourWritersAndAPushPullPruneLoopNeverSurfaceLockedAndLoseNoCapture() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.trust(b, as: "b")
        try await b.trust(a, as: "a")
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        let done = exchange.file("writers-done")
        let execWrites = 60
        let shellWrites = 60
        let execWriters = ["e1", "e2"]
        let shellWriters = ["s1", "s2"]

        func sh(_ script: String, _ variables: [String: String]) async throws -> CommandResult {
            try await CommandRunner.run("/bin/sh", ["-c", script], environment: SyncProcess.environment(variables))
        }
        let started = ContinuousClock.now
        async let loop = sh(
            Self.syncLoop,
            ["SYNC": SyncProcess.path, "A": a.path, "B": b.path, "FOLDER": exchange.path + "/shared", "DONE": done])
        // The exchange folder must exist before the first push.
        try FileManager.default.createDirectory(atPath: exchange.path + "/shared", withIntermediateDirectories: true)
        async let e1 = sh(
            ConcurrencyTests.loop, ["SYNC": SyncProcess.path, "STORE": a.path, "WHO": "e1", "COUNT": "\(execWrites)"])
        async let e2 = sh(
            ConcurrencyTests.loop, ["SYNC": SyncProcess.path, "STORE": a.path, "WHO": "e2", "COUNT": "\(execWrites)"])
        async let s1 = sh(
            Self.shellLoop, ["SQLITE": SQLiteShell.path, "STORE": a.path, "WHO": "s1", "COUNT": "\(shellWrites)"])
        async let s2 = sh(
            Self.shellLoop, ["SQLITE": SQLiteShell.path, "STORE": a.path, "WHO": "s2", "COUNT": "\(shellWrites)"])
        let writers = try await [e1, e2, s1, s2]
        _ = FileManager.default.createFile(atPath: done, contents: nil)
        let syncLoop = try await loop
        print(
            "WritersAndSyncLoopConcurrencyTests: 4 writers and \(syncLoop.stdoutLines.last ?? "?") of push/pull/prune took \(ContinuousClock.now - started)"
        )

        // No busy or locked error reached anyone; every command succeeded.
        for (who, result) in zip(execWriters + shellWriters, writers) {
            #expect(result.exitCode == 0, "\(who) had \(result.exitCode) failed write(s): \(result)")
            #expect(
                !result.stderr.lowercased().contains("locked") && !result.stderr.lowercased().contains("busy"),
                "\(who): \(result)")
            #expect(result.stderr.isEmpty, "\(who): \(result)")
        }
        #expect(syncLoop.exitCode == 0, "the sync loop had \(syncLoop.exitCode) failed command(s): \(syncLoop)")
        #expect(
            !syncLoop.stderr.lowercased().contains("locked") && !syncLoop.stderr.lowercased().contains("busy"),
            "\(syncLoop)")
        #expect(syncLoop.stderr.isEmpty, "\(syncLoop)")
        let rounds = Int(syncLoop.stdoutLines.last?.split(separator: " ").last ?? "") ?? 0
        #expect(rounds >= 2, "\(syncLoop)")

        // Final exchange: B receives what A wrote after the loop's last push.
        try #require(try await a.sync("push", "--to", exchange.path + "/shared").exitCode == 0)
        let finalPull = try await SyncProcess.run([
            "pull", "--store", b.path, "--from", exchange.path + "/shared", "--no-prune",
        ])
        try #require(finalPull.exitCode == 0 && finalPull.stderr.isEmpty, "\(finalPull)")

        // No capture lost or duplicated: B never pruned, so its history holds every transaction A
        // made, numbered 1, 2, 3… without a gap, and each write's row is inserted by exactly one.
        let aID = try await a.id().description
        let fromA = try await b.log().filter { $0.replica == aID }
        #expect(fromA.map(\.seq) == Array(1...Int64(fromA.count)), "A's sequence numbers as B holds them")
        var insertedBy: [String: [LoggedTransaction]] = [:]
        for transaction in fromA {
            for change in transaction.changes where change.table == "items" && change.type == "insert" {
                guard case .text(let id)? = change.key["id"] else { continue }
                insertedBy[id, default: []].append(transaction)
            }
        }
        let expectedIDs =
            execWriters.flatMap { who in (1...execWrites).map { "\(who)-\($0)" } }
            + shellWriters.flatMap { who in (1...shellWrites).map { "\(who)-\($0)" } }
        #expect(
            Set(insertedBy.keys) == Set(expectedIDs),
            "missing: \(Set(expectedIDs).subtracting(insertedBy.keys).sorted())")
        for id in expectedIDs {
            let transactions = insertedBy[id] ?? []
            #expect(transactions.count == 1, "\(id) is inserted by \(transactions.count) transactions")
            let who = String(id.prefix(2))
            if execWriters.contains(who) {
                // `sync exec` writes are their own transaction, with their author.
                #expect(
                    transactions.first?.author == who && transactions.first?.changes.count == 1,
                    "\(id): \(transactions)")
            } else {
                // Shell writes are sealed as external transactions (several may share one).
                #expect(transactions.first.map { $0.author == nil && $0.pid == nil } == true, "\(id): \(transactions)")
            }
        }

        // A pruned while the writers wrote (its history no longer starts at 1) and what it kept has
        // no gap and ends where B's copy does.
        let aHistory = try await a.log().filter { $0.replica == aID }.map(\.seq)
        #expect(aHistory.first.map { $0 > 1 } ?? true, "A never pruned: \(aHistory.prefix(5))")
        if let first = aHistory.first, let last = aHistory.last {
            #expect(aHistory == Array(first...last))
            #expect(last == fromA.last?.seq)
        }

        // The replicas converged.
        let rows = "SELECT id, qty FROM items ORDER BY id"
        let rowsA = try await SQLiteShell.execute(a.path, rows)
        #expect(rowsA == (try await SQLiteShell.execute(b.path, rows)))
        #expect(rowsA.split(separator: "\n").count == expectedIDs.count)
    }
}
