import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// The fold of a replica's own changes into row metadata (`LocalFold`), seen through the history
/// it exports and the rows a peer then holds.
@Suite struct LocalFoldTests {
    /// Inserts of new rows have their metadata written many to a statement. A row inserted again
    /// after its delete, among them, has metadata already: the store refuses that batch, and each
    /// of its rows folds alone, the row into its next life and its neighbours as new rows.
    @Test func aRowInsertedAgainAmongNewRowsStartsItsNextLife() throws {
        let directory = try TemporaryDirectory("tidemark-fold")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        _ = try a.store.write(author: "fill") { db in
            for i in 0..<40 {
                try db.execute(sql: "INSERT INTO items(id, name) VALUES (?, 'first')", arguments: ["r\(i)"])
            }
        }
        _ = try b.store.importBundle(at: try a.export(to: directory.file("first.tmb")).path)
        _ = try a.store.execute(sql: "DELETE FROM items WHERE id = 'r20'", author: "delete")
        _ = try a.store.write(author: "again") { db in
            for i in 0..<30 {
                if i == 15 { try db.execute(sql: "INSERT INTO items(id, name) VALUES ('r20', 'second')") }
                try db.execute(sql: "INSERT INTO items(id, name) VALUES (?, 'new')", arguments: ["n\(i)"])
            }
        }
        let export = try a.export(since: try b.store.currentToken(), to: directory.file("again.tmb"))
        _ = try b.store.importBundle(at: export.path)

        let again = try #require(try a.transactions().last)
        #expect(again.changes.count == 31)
        let generations = Dictionary(uniqueKeysWithValues: again.changes.map { ($0.keyValues["id"]!, $0.generation) })
        #expect(generations[.text("r20")] == 3)
        #expect(generations.filter { $0.key != .text("r20") }.values.allSatisfy { $0 == 1 })
        try ExchangeExpect.sameTables([a, b])
        #expect(try b.tables()["items"]?.rows.count == 70)
        for replica in [a, b] {
            #expect(try replica.store.rowDigest().digest == replica.tables().rowDigest)
        }
    }
}
