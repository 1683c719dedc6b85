import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `Store.fetchHistory`: tokens, filters and refusals.
@Suite struct HistoryFetchTests {
    /// A store with five transactions: three by alice in context "ui" touching items, two by bob
    /// touching tags (the last one also updates an item's qty).
    static func fiveTransactions() throws -> StoreFixture {
        let fixture = try StoreFixture()
        let store = fixture.store
        _ = try store.execute(sql: "INSERT INTO items(id, qty) VALUES ('a', 1)", author: "alice", contextName: "ui")
        _ = try store.execute(sql: "UPDATE items SET name = 'A' WHERE id = 'a'", author: "alice", contextName: "ui")
        _ = try store.execute(sql: "INSERT INTO tags VALUES ('a', 'x', 1)", author: "bob", contextName: "import")
        _ = try store.execute(sql: "UPDATE items SET qty = 2 WHERE id = 'a'", author: "alice", contextName: "ui")
        _ = try store.execute(
            sql: "INSERT INTO tags VALUES ('a', 'y', 1); UPDATE items SET qty = 3, note = 1 WHERE id = 'a'",
            author: "bob")
        return fixture
    }

    @Test func eachTransactionCarriesTheTokenAfterIt() throws {
        let fixture = try Self.fiveTransactions()
        let history = try fixture.store.fetchHistory()
        let id = fixture.store.replica.id
        #expect(history.map(\.sequence) == [1, 2, 3, 4, 5])
        #expect(history.map(\.token) == (1...5).map { History.Token(sequences: [id: Int64($0)]) })
        #expect(try fixture.store.currentToken() == history.last?.token)
    }

    @Test(arguments: 0...5)
    func fetchAfterATokenReturnsExactlyTheLaterTransactions(position: Int) throws {
        let fixture = try Self.fiveTransactions()
        let all = try fixture.store.fetchHistory()
        let token = position == 0 ? History.Token.zero : all[position - 1].token
        let later = try fixture.store.fetchHistory(HistoryRequest(after: token))
        #expect(later.map(\.sequence) == (position..<5).map { Int64($0 + 1) })
        #expect(later == Array(all.dropFirst(position)))
    }

    @Test func fetchAfterTheCurrentTokenIsEmptyUntilTheNextWrite() throws {
        let fixture = try Self.fiveTransactions()
        let now = try fixture.store.currentToken()
        #expect(try fixture.store.fetchHistory(HistoryRequest(after: now)).isEmpty)
        _ = try fixture.store.execute(sql: "DELETE FROM tags")
        let next = try fixture.store.fetchHistory(HistoryRequest(after: now))
        #expect(next.map(\.sequence) == [6])
        #expect(next.first?.changes.map(\.type) == [.delete, .delete])
    }

    @Test func filtersByAuthorAndContext() throws {
        let fixture = try Self.fiveTransactions()
        let store = fixture.store
        #expect(try store.fetchHistory(HistoryRequest(authors: ["alice"])).map(\.sequence) == [1, 2, 4])
        #expect(try store.fetchHistory(HistoryRequest(authors: ["alice", "bob"])).map(\.sequence) == [1, 2, 3, 4, 5])
        #expect(try store.fetchHistory(HistoryRequest(authors: ["carol"])).isEmpty)
        #expect(try store.fetchHistory(HistoryRequest(contextNames: ["import"])).map(\.sequence) == [3])
        #expect(try store.fetchHistory(HistoryRequest(authors: ["bob"], contextNames: ["ui"])).isEmpty)
        let token = try store.fetchHistory()[1].token
        #expect(try store.fetchHistory(HistoryRequest(after: token, authors: ["alice"])).map(\.sequence) == [4])
    }

    @Test func filtersByTableKeepOnlyThatTablesChanges() throws {
        let fixture = try Self.fiveTransactions()
        let tags = try fixture.store.fetchHistory(HistoryRequest(tables: ["tags"]))
        #expect(tags.map(\.sequence) == [3, 5])
        #expect(tags.allSatisfy { $0.changes.allSatisfy { $0.table == "tags" } })
        #expect(tags.last?.changes.count == 1)
        #expect(try fixture.store.fetchHistory(HistoryRequest(tables: ["items"])).map(\.sequence) == [1, 2, 4, 5])
    }

    @Test func aTableHistoryCannotHoldIsRefusedAndAnUntrackedOneKeepsItsHistory() throws {
        let fixture = try Self.fiveTransactions()
        let store = fixture.store
        try store.migrate(Store.Migration(sql: "CREATE TABLE notes(id TEXT PRIMARY KEY)"))
        #expect(throws: StoreError.neverTracked("notes")) { try store.fetchHistory(HistoryRequest(tables: ["notes"])) }
        #expect(throws: StoreError.unknownTable("nope")) { try store.fetchHistory(HistoryRequest(tables: ["nope"])) }
        try store.migrate(Store.Migration(sql: "DROP TABLE tags", untrack: ["tags"]))
        #expect(try store.fetchHistory(HistoryRequest(tables: ["tags"])).map(\.sequence) == [3, 5])
    }

    @Test func filtersByUpdatedColumn() throws {
        let fixture = try Self.fiveTransactions()
        let qty = try fixture.store.fetchHistory(HistoryRequest(updatedColumn: ("items", "qty")))
        #expect(qty.map(\.sequence) == [4, 5])
        #expect(qty.last?.changes.map(\.updatedColumns) == [["qty", "note"]])
        #expect(try fixture.store.fetchHistory(HistoryRequest(updatedColumn: ("items", "name"))).map(\.sequence) == [2])
        // An insert sets every column but updates none.
        #expect(try fixture.store.fetchHistory(HistoryRequest(updatedColumn: ("tags", "weight"))).isEmpty)
    }

    @Test func limitReturnsTheOldestFirst() throws {
        let fixture = try Self.fiveTransactions()
        #expect(try fixture.store.fetchHistory(HistoryRequest(limit: 2)).map(\.sequence) == [1, 2])
        let token = try fixture.store.fetchHistory()[2].token
        #expect(try fixture.store.fetchHistory(HistoryRequest(after: token, limit: 1)).map(\.sequence) == [4])
    }

    @Test func filtersByDate() throws {
        let fixture = try StoreFixture(options: Store.Options(clock: FixedWallClock(milliseconds: 1_000_000)))
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('b')")
        let later = try fixture.reopen(options: Store.Options(clock: FixedWallClock(milliseconds: 2_000_000)))
        _ = try later.execute(sql: "INSERT INTO items(id) VALUES ('c')")
        #expect(
            try later.fetchHistory(HistoryRequest(afterDate: Date(timeIntervalSince1970: 1_500))).map(\.sequence) == [3]
        )
        #expect(
            try later.fetchHistory(HistoryRequest(afterDate: Date(timeIntervalSince1970: 999))).map(\.sequence) == [
                1, 2, 3,
            ])
        // Both readings of the first millisecond are "at" 1000 s, not after it.
        #expect(
            try later.fetchHistory(HistoryRequest(afterDate: Date(timeIntervalSince1970: 1_000))).map(\.sequence) == [3]
        )
    }

    @Test func aTokenClaimingMoreOfThisReplicaThanItMadeIsRefused() throws {
        let fixture = try Self.fiveTransactions()
        let id = fixture.store.replica.id
        for claim in [Int64(6), 1_000_000, Int64.max] {
            let foreign = History.Token(sequences: [id: claim])
            #expect(throws: StoreError.foreignToken(token: foreign.description)) {
                try fixture.store.fetchHistory(HistoryRequest(after: foreign))
            }
        }
    }

    @Test func aTokenForThisReplicaOnAStoreWithNoHistoryIsRefused() throws {
        let fixture = try StoreFixture()
        let foreign = History.Token(sequences: [fixture.store.replica.id: 1])
        #expect(throws: StoreError.foreignToken(token: foreign.description)) {
            try fixture.store.fetchHistory(HistoryRequest(after: foreign))
        }
        // Also beside a replica the store knows.
        let directory = try TemporaryDirectory("tidemark-token")
        let peer = try TestReplica("peer", in: directory)
        try fixture.store.addPeer(name: "peer", publicKeyBase64: peer.publicKeyBase64)
        let mixed = History.Token(sequences: [fixture.store.replica.id: 1, peer.id: 1])
        #expect(throws: StoreError.foreignToken(token: mixed.description)) {
            try fixture.store.fetchHistory(HistoryRequest(after: mixed))
        }
    }

    /// A token from another store's history names only replicas this store never heard of: it is
    /// refused rather than taken to cover nothing. A token that names one this store knows besides
    /// (a peer's, which holds a third replica's history this one has not received) covers what it
    /// says; a trusted peer's is fine, history of it or not.
    @Test func aTokenNamingOnlyUnknownReplicasIsRefused() throws {
        let fixture = try Self.fiveTransactions()
        let stranger = Replica.ID(bytes: [UInt8](repeating: 0xee, count: 16))!
        let token = History.Token(sequences: [stranger: 40])
        #expect(throws: StoreError.foreignToken(token: token.description)) {
            try fixture.store.fetchHistory(HistoryRequest(after: token))
        }
        let mixed = History.Token(sequences: [stranger: 40, fixture.store.replica.id: 3])
        #expect(try fixture.store.fetchHistory(HistoryRequest(after: mixed)).map(\.sequence) == [4, 5])
        let directory = try TemporaryDirectory("tidemark-token")
        let peer = try TestReplica("peer", in: directory)
        _ = try peer.store.execute(sql: "INSERT INTO items(id) VALUES ('p')")
        try fixture.store.addPeer(name: "peer", publicKeyBase64: peer.publicKeyBase64)
        let fromPeer = try peer.store.currentToken()
        #expect(try fixture.store.fetchHistory(HistoryRequest(after: fromPeer)).map(\.sequence) == [1, 2, 3, 4, 5])
    }
}
