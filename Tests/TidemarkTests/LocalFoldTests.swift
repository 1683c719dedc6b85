import Foundation
import GRDB
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

    /// The fold writes a change's generation into history only where it is not its kind's default
    /// (1 for an insert or update, 2 for a delete). History reads the same either way: 0 before the
    /// fold, the generation after it, here and on a peer, across a row's three lives.
    @Test func generationsReadTheSameWhetherWrittenOrLeftAtTheirDefault() throws {
        let directory = try TemporaryDirectory("tidemark-fold")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        let steps = [
            "INSERT INTO items(id, name) VALUES ('r', 'one')", "UPDATE items SET name = 'two' WHERE id = 'r'",
            "DELETE FROM items WHERE id = 'r'", "INSERT INTO items(id, name) VALUES ('r', 'three')",
            "UPDATE items SET name = 'four' WHERE id = 'r'", "DELETE FROM items WHERE id = 'r'",
            "INSERT INTO items(id, name) VALUES ('r', 'five')",
        ]
        for step in steps { _ = try a.store.execute(sql: step) }
        let generations = { (replica: TestReplica) in
            try replica.transactions().filter { $0.origin == a.store.replica.id }.flatMap(\.changes).map(\.generation)
        }
        #expect(try generations(a) == [0, 0, 0, 0, 0, 0, 0])
        _ = try b.store.importBundle(at: try a.export(to: directory.file("lives.tmb")).path)
        #expect(try generations(a) == [1, 1, 2, 3, 3, 4, 5])
        #expect(try generations(b) == [1, 1, 2, 3, 3, 4, 5])
        // Only the generations past the first life were written.
        let other = try DatabaseQueue(path: a.path)
        let written = try other.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM tidemark_changes WHERE gen IS NOT NULL")
        }
        try other.close()
        #expect(written == 4)
        try ExchangeExpect.sameTables([a, b])
    }
}
