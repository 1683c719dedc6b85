import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `Store.deleteHistory`: what remains, and what older tokens get afterwards.
@Suite struct HistoryDeleteTests {
    @Test func deletingBeforeATokenExpiresOlderTokens() throws {
        let fixture = try HistoryFetchTests.fiveTransactions()
        let store = fixture.store
        let tokens = try store.fetchHistory().map(\.token)

        #expect(try store.deleteHistory(before: tokens[2]) == 3)

        for older in [History.Token.zero, tokens[0], tokens[1]] {
            #expect(
                throws: StoreError.historyTokenExpired(
                    token: older.description, replica: store.replica.id, prunedThrough: 3)
            ) {
                try store.fetchHistory(HistoryRequest(after: older))
            }
        }
        #expect(try store.fetchHistory(HistoryRequest(after: tokens[2])).map(\.sequence) == [4, 5])
        #expect(try store.fetchHistory(HistoryRequest(after: tokens[3])).map(\.sequence) == [5])
        // With no token, what remains.
        let remaining = try store.fetchHistory()
        #expect(remaining.map(\.sequence) == [4, 5])
        #expect(remaining.map(\.token) == [tokens[3], tokens[4]])
        #expect(try store.status().transactionCount == 2)
        // The current token does not go back.
        #expect(try store.currentToken() == tokens[4])
    }

    @Test func expiredErrorSaysWhatToDo() {
        let id = Replica.ID(bytes: [UInt8](repeating: 0xab, count: 16))!
        let error = StoreError.historyTokenExpired(token: "tm1.x", replica: id, prunedThrough: 3)
        #expect(error.description.contains("expired"))
        #expect(error.description.contains("abababab"))
        #expect(error.hint != nil)
    }

    @Test func deletingAgainWithAnOlderTokenDeletesNothingAndKeepsTheExpiry() throws {
        let fixture = try HistoryFetchTests.fiveTransactions()
        let store = fixture.store
        let tokens = try store.fetchHistory().map(\.token)
        #expect(try store.deleteHistory(before: tokens[2]) == 3)
        #expect(try store.deleteHistory(before: tokens[0]) == 0)
        #expect(throws: StoreError.self) { try store.fetchHistory(HistoryRequest(after: tokens[1])) }
        #expect(try store.fetchHistory().map(\.sequence) == [4, 5])
    }

    @Test func captureGoesOnAfterAllHistoryIsDeleted() async throws {
        let fixture = try HistoryFetchTests.fiveTransactions()
        let store = fixture.store
        let end = try store.currentToken()
        #expect(try store.deleteHistory(before: end) == 5)
        #expect(try store.fetchHistory().isEmpty)
        #expect(try store.fetchHistory(HistoryRequest(after: end)).isEmpty)

        _ = try store.execute(sql: "INSERT INTO items(id) VALUES ('after')", author: "app")
        try await SQLiteShell.execute(fixture.path, "INSERT INTO items(id) VALUES ('shell')")
        let history = try store.fetchHistory(HistoryRequest(after: end))
        #expect(history.map(\.sequence) == [6, 7])
        #expect(history.map { $0.changes.map(\.keyValues) } == [[["id": .text("after")]], [["id": .text("shell")]]])
        #expect(try store.fetchHistory() == history)

        // And from a reopened store.
        #expect(try fixture.reopen().fetchHistory() == history)
    }

    @Test func deletingBeforeADate() throws {
        let fixture = try StoreFixture(options: Store.Options(clock: FixedWallClock(milliseconds: 1_000_000)))
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('b')")
        let later = try fixture.reopen(options: Store.Options(clock: FixedWallClock(milliseconds: 2_000_000)))
        _ = try later.execute(sql: "INSERT INTO items(id) VALUES ('c')")
        let tokens = try later.fetchHistory().map(\.token)

        #expect(try later.deleteHistory(before: Date(timeIntervalSince1970: 999)) == 0)
        #expect(try later.deleteHistory(before: Date(timeIntervalSince1970: 1_500)) == 2)
        #expect(try later.fetchHistory().map(\.sequence) == [3])
        #expect(
            throws: StoreError.historyTokenExpired(
                token: tokens[0].description, replica: later.replica.id, prunedThrough: 2)
        ) {
            try later.fetchHistory(HistoryRequest(after: tokens[0]))
        }
        #expect(try later.fetchHistory(HistoryRequest(after: tokens[1])).map(\.sequence) == [3])
    }

    @Test func deletingSealsForeignWritesFirst() async throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        let token = try fixture.store.currentToken()
        try await SQLiteShell.execute(fixture.path, "INSERT INTO items(id) VALUES ('shell')")
        #expect(try fixture.store.deleteHistory(before: token) == 1)
        let remaining = try fixture.store.fetchHistory()
        #expect(remaining.map(\.sequence) == [2])
        #expect(remaining.first?.changes.map(\.keyValues) == [["id": .text("shell")]])
    }
}
