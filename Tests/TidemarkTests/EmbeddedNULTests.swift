import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Text with a NUL character is read the same way on every path of the store (raw statements and
/// GRDB alike: up to the NUL), so an origin's chain hash computed from history matches the one its
/// bundles carry.
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
    }
}
