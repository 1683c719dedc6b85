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

    /// Rows enough that their bundle is large (past `BundleApplier.isLarge`): random text does not
    /// compress.
    static let manyRows = """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
        INSERT INTO items(id, name) SELECT 'many-' || i, hex(randomblob(16)) FROM n
        """

    /// A large import turns the connection's triggers off while it merges, where the schema holds
    /// none but the capture triggers: they are on again after it, for the same connection's writes.
    @Test func aLargeImportTurnsTriggersOffAndCaptureGoesOn() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: Self.manyRows)
        let pushed = try group.push("a")
        let size = try FileManager.default.attributesOfItem(atPath: try #require(pushed.path))[.size] as? Int
        #expect((size ?? 0) >= 16_384, "the bundle is large: \(size ?? 0) bytes")
        try group.pull("b", prune: false)
        #expect(try b.tables()["items"]?.rows.count == 2000)
        #expect(try b.store.fetchHistory().filter { $0.origin == b.id }.isEmpty, "the merge was not captured")
        _ = try b.store.execute(sql: "UPDATE items SET name = 'seen' WHERE id = 'many-7'")
        #expect(try Self.lastKeys(b) == ["many-7"])
        try group.round(prune: false)
        #expect(try group.tableDifferences() == [])
    }

    /// Where the schema holds an app's trigger, a large import leaves the connection's triggers on:
    /// the app's runs for every merged row, as it does for a small import.
    @Test func aLargeImportRunsTheAppsTriggers() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try b.store.execute(
            sql: """
                CREATE TABLE arrivals(n INTEGER);
                INSERT INTO arrivals VALUES (0);
                CREATE TRIGGER counted AFTER INSERT ON items BEGIN UPDATE arrivals SET n = n + 1; END
                """)
        _ = try a.store.execute(sql: Self.manyRows)
        try group.push("a")
        try group.pull("b", prune: false)
        #expect(try b.store.execute(sql: "SELECT n FROM arrivals").0[0].rows == [[.integer(2000)]])
    }

    /// A foreign-key action runs in a large import too, and what it changes in a row the writer
    /// never saw is recorded (merge.md §5.6).
    @Test func aLargeImportRecordsWhatAnActionChanged() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE lists(id TEXT PRIMARY KEY, name TEXT);
                CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, list TEXT REFERENCES lists(id) ON DELETE CASCADE);
                """, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO lists VALUES ('l1', 'groceries')")
        try group.round(prune: false)
        _ = try a.store.execute(sql: Self.manyRows + "; DELETE FROM lists WHERE id = 'l1'")
        _ = try b.store.execute(sql: "INSERT INTO items VALUES ('i1', 'milk', 'l1')")
        for _ in 0..<2 { try group.round(prune: false) }
        #expect(try group.tableDifferences() == [])
        #expect(try a.tables()["items"]?.rows.contains { $0[0] == .text("i1") } == false)
        #expect(try b.store.conflicts().map { "\($0.table) \($0.kind)" } == ["items removed"])
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
