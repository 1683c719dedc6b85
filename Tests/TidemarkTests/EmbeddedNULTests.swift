import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Text with a NUL character replicates whole, every byte (Protocol/bundle.md §4.1), as a key and
/// as a value, and an origin's chain hash computed from history matches the one its bundles carry.
@Suite struct EmbeddedNULTests {
    @Test func chainsStayContinuousAcrossExportsOfTextWithANUL() throws {
        let directory = try TemporaryDirectory("tidemark-nul")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('n', 'x' || char(0) || 'y')")
        let afterFirst = try a.store.currentToken()
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('m', 'plain')")
        // An export since #1 computes a's chain hash at #1 from history.
        _ = try a.store.exportBundle(since: afterFirst, to: directory.file("since-1.tmb"), key: a.key)
        _ = try a.store.exportBundle(since: try b.store.currentToken(), to: directory.file("all.tmb"), key: a.key)
        _ = try b.store.importBundle(at: directory.file("all.tmb"))
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('o', 'later')")
        _ = try a.store.exportBundle(since: afterFirst, to: directory.file("since-1-again.tmb"), key: a.key)
        let summary = try b.store.importBundle(at: directory.file("since-1-again.tmb"))
        #expect(summary.appliedTransactions == 1)
        let items = { (path: String) in
            try StoreSnapshot.trackedTables(of: path).removing { table, _ in table != "items" }
        }
        #expect(try items(a.path) == items(b.path))
        #expect(try items(b.path)["items"]?.rows.contains { $0.contains(.text("x\u{0}y")) } == true)
    }

    @Test func executeReturnsTextWithANULWholeAndEveryStorageClassAsStored() throws {
        let directory = try TemporaryDirectory("tidemark-nul")
        let a = try TestReplica("a", in: directory)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('n', 'x' || char(0) || 'y')")
        let (results, commit) = try a.store.execute(
            sql: "SELECT name, 7, 2.5, x'00ff', NULL, '' FROM items WHERE id = 'n'")
        #expect(commit == nil)
        #expect(
            results.first?.rows == [[.text("x\u{0}y"), .integer(7), .real(2.5), .blob([0, 255]), .null, .text("")]])
    }

    @Test func textWithANULReplicatesWholeAsAKeyAndAValueBothWays() throws {
        let directory = try TemporaryDirectory("tidemark-nul")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try TestReplica.trustEachOther([a, b])
        let exchange = { (from: TestReplica, to: TestReplica, name: String) in
            _ = try from.store.exportBundle(
                since: try to.store.currentToken(), to: directory.file(name), key: from.key)
            _ = try to.store.importBundle(at: directory.file(name))
        }
        _ = try a.store.execute(
            sql: "INSERT INTO items(id, name, note) VALUES ('k' || char(0) || 'z', 'v' || char(0), char(0))")
        try exchange(a, b, "1.tmb")
        // b updates the row found by its whole key; a deletes another written whole.
        _ = try b.store.execute(sql: "UPDATE items SET name = 'w' || char(0) || 'w' WHERE id = 'k' || char(0) || 'z'")
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('d' || char(0), 'gone')")
        try exchange(b, a, "2.tmb")
        _ = try a.store.execute(sql: "DELETE FROM items WHERE id = 'd' || char(0)")
        try exchange(a, b, "3.tmb")
        let rows = try a.tables()["items"]?.rows ?? []
        #expect(try a.tables() == b.tables())
        #expect(rows.count == 1)
        #expect(rows.first?.first == .text("k\u{0}z"))
        #expect(rows.first?.contains(.text("w\u{0}w")) == true)
        #expect(rows.first?.contains(.text("\u{0}")) == true)
        #expect(try a.store.rowDigest().digest == b.store.rowDigest().digest)
    }
}
