import Foundation
import GRDB
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// An import pauses capture with one row in `tidemark_paused` instead of removing the capture
/// triggers (`CaptureTriggers.paused`): the schema stays as it was, and capture runs again
/// whatever becomes of the import.
@Suite struct CapturePauseTests {
    /// The schema cookie of the store's file and the SQL of its capture triggers.
    static func schema(_ replica: TestReplica) throws -> (cookie: Int, triggers: [String]) {
        let queue = try DatabaseQueue(path: replica.path)
        defer { try? queue.close() }
        return try queue.read { db in
            (
                Int(try db.schemaVersion()),
                try String.fetchAll(
                    db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY rowid")
            )
        }
    }

    /// The keys of the rows of `items` the last transaction of `replica`'s history changed.
    static func lastKeys(_ replica: TestReplica) throws -> [String] {
        try (replica.store.fetchHistory().last?.changes.rows ?? []).map { change in
            change.key.map { column in
                if case .text(let text) = column.value { return text }
                return "\(column.value)"
            }.joined(separator: ",")
        }
    }

    @Test func anImportLeavesTheSchemaAsItWasAndLaterWritesAreCaptured() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'from a')")
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b1', 'from b')")
        _ = try b.store.push(to: group.folder, key: b.key)
        let before = try Self.schema(a)

        #expect(try a.store.pull(from: group.folder, key: a.key).changedTables == ["items"])
        let after = try Self.schema(a)
        #expect(after.cookie == before.cookie, "an import changes no schema: no other connection parses it again")
        #expect(after.triggers == before.triggers)
        #expect(
            try a.store.execute(sql: "SELECT count(*) FROM tidemark_paused").0[0].rows == [[.integer(0)]])
        // The import recorded b's row as b's, not as a write of a.
        #expect(try a.store.fetchHistory().filter { $0.origin == a.store.replica.id }.count == 1)

        _ = try a.store.execute(sql: "UPDATE items SET name = 'changed' WHERE id = 'b1'")
        #expect(try Self.lastKeys(a) == ["b1"])
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in try db.execute(sql: "INSERT INTO items(id, name) VALUES ('x1', 'other client')") }
        try other.close()
        #expect(try Self.lastKeys(a) == ["x1"])
        #expect(a.store.restoredCaptureTriggers.isEmpty)
    }

    /// A caller that catches what the paused body threw and commits all the same keeps capture.
    @Test func captureRunsAgainWhenThePausedBodyThrows() throws {
        let group = try ExchangeGroup(["a"])
        let a = group["a"]
        struct Refused: Error {}
        let tables = a.store.trackedTables
        _ = try a.store.database.write { db in
            #expect(throws: Refused.self) {
                try CaptureTriggers.paused(tables, in: db) {
                    try db.execute(sql: "INSERT INTO items(id, name) VALUES ('p1', 'paused')")
                    throw Refused()
                }
            }
        }
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'after')")
        #expect(try Self.lastKeys(a) == ["a1"])
        #expect(
            !(try a.store.fetchHistory().contains { $0.changes.rows.contains { $0.key.first?.value == .text("p1") } }))
    }

    /// Only another client can leave capture paused: the next open resumes it, forgets the row
    /// digests (the writes meanwhile changed rows without a schema change to tell), and names
    /// every tracked table as one whose writes went unrecorded.
    @Test func captureLeftPausedByAnotherClientIsResumedOnOpenAndReported() throws {
        let group = try ExchangeGroup(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'one')")
        _ = try a.store.rowDigest()
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in
            try db.execute(sql: "INSERT INTO tidemark_paused VALUES (1)")
            try db.execute(sql: "INSERT INTO items(id, name) VALUES ('x1', 'unrecorded')")
        }
        try other.close()

        let reopened = try Store.open(a.path)
        #expect(reopened.restoredCaptureTriggers == ["items", "tags"])
        #expect(
            try reopened.execute(sql: "SELECT count(*) FROM tidemark_paused").0[0].rows == [[.integer(0)]])
        #expect(try reopened.rowDigest().digest.tables.first { $0.name == "items" }?.rows == 2, "counted again")
        _ = try reopened.execute(sql: "INSERT INTO items(id, name) VALUES ('a2', 'recorded')")
        #expect(try reopened.fetchHistory().last?.changes.rows.map(\.key) == [[.init("id", .text("a2"))]])
        #expect(try Store.open(a.path).restoredCaptureTriggers.isEmpty, "resumed once")
    }
}
