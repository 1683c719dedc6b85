import Foundation
import GRDB
import TidemarkCore

/// What a replica knows about one row identity, beyond its values (Protocol/merge.md §2): its causal
/// length and, for each non-key column, the clock of the write that set its value.
struct RowMetadata: Equatable {
    /// Causal length: 0 never seen, odd alive, even deleted.
    var generation: Int64
    /// Per column index; nil for key columns and columns not written in the current life.
    var clocks: [MergeClock?]

    var isAlive: Bool { generation % 2 == 1 }

    /// The generation a delete leads to.
    var afterDelete: Int64 { isAlive ? generation + 1 : (generation == 0 ? 2 : generation) }
    /// The generation an insert leads to.
    var afterInsert: Int64 { isAlive ? generation : generation + 1 }
}

/// Reads and writes one tracked table's row metadata.
struct RowMetadataStore {
    let table: TrackedTable
    private let nonKey: [Int]
    private let fetchSQL: String
    private let saveSQL: String

    init(table: TrackedTable) {
        self.table = table
        let nonKey = table.columns.indices.filter { !table.keyIndexes.contains($0) }
        self.nonKey = nonKey
        let name = Bookkeeping.rowMetadataTable(table)
        let keyMatch = table.keyIndexes.indices.map { "k\($0) = ?" }.joined(separator: " AND ")
        let clocks = nonKey.flatMap { ["t\($0)", "o\($0)"] }
        fetchSQL = "SELECT \((["cl"] + clocks).joined(separator: ", ")) FROM \(name) WHERE \(keyMatch)"
        let columns = table.keyIndexes.indices.map { "k\($0)" } + ["cl"] + clocks
        saveSQL = "INSERT OR REPLACE INTO \(name)(\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
    }

    /// The metadata of the row with `key` (values in key order), or generation 0 if never seen.
    func fetch(_ db: Database, key: [SQLValue]) throws -> RowMetadata {
        let statement = try db.cachedStatement(sql: fetchSQL)
        var clocks = [MergeClock?](repeating: nil, count: table.columns.count)
        guard let row = try Row.fetchOne(statement, arguments: StatementArguments(key)) else {
            return RowMetadata(generation: 0, clocks: clocks)
        }
        for (n, column) in nonKey.enumerated() {
            if let packed = row[1 + 2 * n] as Int64?, let origin = (row[2 + 2 * n] as Data?).flatMap({ Replica.ID(bytes: [UInt8]($0)) }) {
                clocks[column] = MergeClock(timestamp: HLCTimestamp(packed: packed), origin: origin)
            }
        }
        return RowMetadata(generation: row[0], clocks: clocks)
    }

    /// Stores the metadata of the row with `key`.
    func save(_ db: Database, key: [SQLValue], _ metadata: RowMetadata) throws {
        let statement = try db.cachedStatement(sql: saveSQL)
        var values: [any DatabaseValueConvertible] = key.map { $0 as any DatabaseValueConvertible }
        values.append(metadata.generation)
        for column in nonKey {
            if let clock = metadata.clocks[column] {
                values.append(clock.timestamp.packed)
                values.append(Data(clock.origin.bytes))
            } else {
                values.append(DatabaseValue.null)
                values.append(DatabaseValue.null)
            }
        }
        try statement.execute(arguments: StatementArguments(values))
    }
}
