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
                environment: SyncProcess.environment(["SYNC": SyncProcess.path, "STORE": store.path, "WHO": who, "COUNT": "\(perProcess)"]))
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
        #expect(try await SQLiteShell.execute(store.path, "SELECT count(*), count(DISTINCT id) FROM items") == "400|400\n")
    }
}
