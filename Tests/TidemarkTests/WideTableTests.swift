import Foundation
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

    @Test func aTableWiderThanRowMetadataCanHoldIsRefusedWithTheLimit() throws {
        let columns = (1..<1200).map { "c\($0)" }.joined(separator: ", ")
        let directory = try TemporaryDirectory("tidemark-wide")
        let error = #expect(throws: StoreError.self) {
            try TestReplica(
                "a", in: directory, schema: "CREATE TABLE wide(id TEXT PRIMARY KEY, \(columns));", preserve: [])
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("at most 996 can be tracked"), "\(String(describing: error))")
    }
}
