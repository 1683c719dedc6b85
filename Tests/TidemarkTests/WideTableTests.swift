import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// Tables wider than one 63-bit mask word: captured, synced and merged column by column.
@Suite struct WideTableTests {
    static let width = 200
    static let schema =
        "CREATE TABLE wide(id TEXT PRIMARY KEY, \((1..<width).map { "c\($0) INTEGER" }.joined(separator: ", ")));"

    @Test func aTableOf200ColumnsIsTrackedSyncedAndMergedColumnByColumn() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        #expect(a.store.trackedTable(named: "wide")?.columns.count == Self.width)
        _ = try a.store.execute(sql: "INSERT INTO wide(id, c1, c100, c199) VALUES ('r', 1, 100, 199)")
        _ = try group.round(prune: false)
        #expect(
            try b.store.execute(sql: "SELECT c1, c100, c199 FROM wide").0[0].rows == [
                [.integer(1), .integer(100), .integer(199)]
            ])

        // Concurrent updates of different columns, in every mask word, both survive.
        _ = try a.store.execute(sql: "UPDATE wide SET c5 = 5, c70 = 70, c150 = 150 WHERE id = 'r'")
        _ = try b.store.execute(sql: "UPDATE wide SET c6 = 6, c71 = 71, c199 = -199 WHERE id = 'r'")
        #expect(try b.store.fetchHistory().last?.changes.first?.values.map(\.name).sorted() == ["c199", "c6", "c71"])
        for _ in 0..<2 { _ = try group.round(prune: false) }
        let differences = try group.tableDifferences()
        #expect(differences.isEmpty, "\(differences)")
        #expect(
            try a.store.execute(sql: "SELECT c1, c5, c6, c70, c71, c100, c150, c199 FROM wide").0[0].rows
                == [
                    [
                        .integer(1), .integer(5), .integer(6), .integer(70), .integer(71), .integer(100), .integer(150),
                        .integer(-199),
                    ]
                ])

        // A migration adds a column past the last word; both replicas keep syncing it.
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE wide ADD COLUMN extra TEXT"))
        try b.store.migrate(Store.Migration(sql: "ALTER TABLE wide ADD COLUMN extra TEXT"))
        _ = try a.store.execute(sql: "UPDATE wide SET extra = 'x', c198 = 198 WHERE id = 'r'")
        _ = try b.store.execute(sql: "DELETE FROM wide WHERE id = 'r'; INSERT INTO wide(id, c2) VALUES ('s', 2)")
        for _ in 0..<2 { _ = try group.round(prune: false) }
        #expect(try group.tableDifferences().isEmpty)
        #expect(try a.store.execute(sql: "SELECT id, c2 FROM wide").0[0].rows == [[.text("s"), .integer(2)]])
    }

    /// The widest table history can hold on a default SQLite build (2000 columns a table): 1964
    /// value columns in `tidemark_changes`, beside its 5 others and 31 more mask words. Its update
    /// trigger compares every column without passing SQLite's expression depth (1000).
    @Test func aTableAsWideAsHistoryCanHoldIsTrackedAndOneWiderIsRefusedWithTheLimit() async throws {
        let widest = 1964
        let schema = { (width: Int) in
            "CREATE TABLE wide(id TEXT PRIMARY KEY, \((1..<width).map { "c\($0)" }.joined(separator: ", ")));"
        }
        let group = try ExchangeGroup(["a", "b"], schema: schema(widest), preserve: [])
        let (a, b) = (group["a"], group["b"])
        #expect(a.store.trackedTable(named: "wide")?.columns.count == widest)
        _ = try a.store.execute(sql: "INSERT INTO wide(id, c1, c\(widest - 1)) VALUES ('r', 1, 2)")
        _ = try group.round(prune: false)
        _ = try a.store.execute(sql: "UPDATE wide SET c1 = 10 WHERE id = 'r'")
        _ = try b.store.execute(sql: "UPDATE wide SET c\(widest - 1) = 20, c1000 = 30 WHERE id = 'r'")
        for _ in 0..<2 { _ = try group.round(prune: false) }
        #expect(try group.tableDifferences().isEmpty)
        #expect(
            try a.store.execute(sql: "SELECT c1, c1000, c\(widest - 1) FROM wide").0[0].rows == [
                [.integer(10), .integer(30), .integer(20)]
            ])

        let directory = try TemporaryDirectory("tidemark-wide")
        let error = #expect(throws: StoreError.self) {
            try TestReplica("c", in: directory, schema: schema(widest + 1), preserve: [])
        }
        #expect(
            "\(error.map { "\($0)" } ?? "")".contains("it has \(widest + 1) columns; at most \(widest) can be tracked"),
            "\(String(describing: error))")

        // A migration that would pass the limit is refused with it, and a hint that fits.
        let before = try a.everything()
        #expect {
            try a.store.migrate(Store.Migration(sql: "ALTER TABLE wide ADD COLUMN extra TEXT"))
        } throws: { error in
            guard case StoreError.tooManyColumnSlots("wide", widest + 1, widest) = error else { return false }
            return (error as? StoreError)?.hint?.contains("untrack the table and track it again") == true
        }
        #expect(try a.everything() == before)

        // The same column added by another client: every open says the limit, not a way out that
        // the limit refuses too (untracking and tracking again).
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in try db.execute(sql: "ALTER TABLE wide ADD COLUMN extra TEXT") }
        try other.close()
        #expect {
            _ = try Store.open(a.path)
        } throws: { error in
            guard case StoreError.tooManyColumnSlots("wide", widest + 1, widest) = error else { return false }
            return true
        }
    }
}
