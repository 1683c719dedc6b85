import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `Store.transactions(after:)`: transactions from this and other processes, as they commit.
@Suite struct ObservationTests {
    /// Milliseconds since 1970 on the system clock, which every process on the machine shares.
    static func wallClockMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The first transaction from `stream` that `matching` accepts, with the wall-clock
    /// millisecond it arrived; nil if none arrived within `timeout` (a guard against hanging, not
    /// a measurement).
    static func first(
        in stream: AsyncThrowingStream<History.Transaction, any Error>, timeout: Duration = .seconds(15),
        matching: @escaping @Sendable (History.Transaction) -> Bool = { _ in true }
    ) async throws -> (transaction: History.Transaction, arrived: Int64)? {
        try await withThrowingTaskGroup(of: (History.Transaction, Int64)?.self) { group in
            group.addTask {
                for try await transaction in stream where matching(transaction) {
                    return (transaction, wallClockMilliseconds())
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Starts waiting for the first transaction of `stream` that touches row `id` of `items`.
    static func waitForRow(_ id: String, in stream: AsyncThrowingStream<History.Transaction, any Error>)
        -> Task<(transaction: History.Transaction, arrived: Int64)?, any Error>
    {
        Task(priority: .high) {
            try await first(in: stream) { $0.changes.contains { $0.keyValues == ["id": .text(id)] } }
        }
    }

    /// Runs `body` at high priority, and so does the stream's own task that `body` starts: the
    /// latency tests measure the store, not the queue of other tests waiting for the same cores.
    static func urgently(_ body: @escaping @Sendable () async throws -> Void) async throws {
        try await Task(priority: .high) { try await body() }.value
    }

    /// The latency is measured from the moment the write committed, as the writing process saw it
    /// on the system clock; noticing that the child process exited can take longer than delivery.
    @Test func aWriteByTheSQLiteShellArrivesWithinOneSecond() async throws {
        try await Self.urgently {
            let fixture = try StoreFixture()
            let stream = fixture.store.transactions(after: try fixture.store.currentToken())
            let arrival = Self.waitForRow("shell", in: stream)

            // The shell autocommits the INSERT, then reads the clock.
            let output = try await SQLiteShell.execute(
                fixture.path,
                """
                INSERT INTO items(id, name) VALUES ('shell', 'from sqlite3');
                SELECT CAST(strftime('%s', 'now') AS INTEGER) * 1000 + CAST(substr(strftime('%f', 'now'), 4) AS INTEGER);
                """)
            let committed = try #require(Int64(output.trimmingCharacters(in: .whitespacesAndNewlines)), "\(output)")

            let (transaction, arrived) = try #require(try await arrival.value, "the shell's write never arrived")
            let latency = arrived - committed
            print("ObservationTests: sqlite3 write arrived \(latency) ms after its commit")
            #expect(latency < 1_000)
            #expect(transaction.sequence == 1)
            #expect(transaction.processID == nil && transaction.author == nil)
            #expect(
                transaction.changes.rows == [
                    RowChange(
                        type: .insert, table: "items", key: [.init("id", .text("shell"))],
                        values: [
                            .init("id", .text("shell")), .init("name", .text("from sqlite3")), .init("qty", .null),
                            .init("price", .null),
                            .init("photo", .null), .init("note", .null),
                        ])
                ])
        }
    }

    /// `sync exec` in a child process (the test bundle builds the `sync` product beside it). The
    /// write's moment is its transaction's timestamp: the wall clock when `exec` sealed it, just
    /// before its commit.
    @Test func aWriteBySyncExecInAnotherProcessArrivesWithinOneSecond() async throws {
        try await Self.urgently {
            let fixture = try StoreFixture()
            let stream = fixture.store.transactions(after: try fixture.store.currentToken())
            let arrival = Self.waitForRow("cli", in: stream)

            let result = try await SyncProcess.run([
                "exec", "--store", fixture.path, "--author", "cli-user", "--context", "terminal",
                "INSERT INTO items(id) VALUES ('cli')",
            ])
            try #require(result.exitCode == 0, "\(result)")

            let (transaction, arrived) = try #require(try await arrival.value, "the exec'd write never arrived")
            let latency = arrived - transaction.timestamp.milliseconds
            print("ObservationTests: sync exec write arrived \(latency) ms after it was sealed")
            #expect(latency < 1_000)
            #expect(transaction.author == "cli-user")
            #expect(transaction.contextName == "terminal")
            #expect(transaction.processID != nil && transaction.processID != ProcessInfo.processInfo.processIdentifier)
        }
    }

    @Test func deliversTheBacklogAfterATokenThenNewWritesInOrder() async throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        _ = try store.execute(sql: "INSERT INTO items(id) VALUES ('one')")
        let afterOne = try store.currentToken()
        _ = try store.execute(sql: "INSERT INTO items(id) VALUES ('two')")
        _ = try store.execute(sql: "INSERT INTO items(id) VALUES ('three')")

        let stream = store.transactions(after: afterOne)
        let collected = Task { () -> [Int64] in
            var sequences: [Int64] = []
            for try await transaction in stream {
                sequences.append(transaction.sequence)
                if sequences.count == 3 { break }
            }
            return sequences
        }
        _ = try store.execute(sql: "INSERT INTO items(id) VALUES ('four')")
        let timeout = Task {
            try await Task.sleep(for: .seconds(15))
            collected.cancel()
        }
        let sequences = try await collected.value
        timeout.cancel()
        #expect(sequences == [2, 3, 4])
    }

    @Test func theStreamFailsWhenItsPositionWasDeleted() async throws {
        let fixture = try HistoryFetchTests.fiveTransactions()
        let store = fixture.store
        let tokens = try store.fetchHistory().map(\.token)
        try store.deleteHistory(before: tokens[2])
        let stream = store.transactions(after: tokens[0])
        await #expect(
            throws: StoreError.historyTokenExpired(
                token: tokens[0].description, replica: store.replica.id, prunedThrough: 3)
        ) {
            for try await _ in stream {}
        }
    }
}
