import Foundation
import GRDB
import TidemarkCore

/// Reads and writes one tracked table's row metadata, with statements prepared once per access.
final class RowMetadataStore {
    let table: TrackedTable
    private let nonKey: [Int]
    private let origins: OriginNumbers
    private let digests: RowDigests?
    /// Non-key columns (indexes into the table's columns) in increasing slot order: the order of
    /// `ColumnClocks` entries.
    private let nonKeyBySlot: [Int]
    /// The column index of each slot; nil for a key column's, a dropped column's or no column.
    private let columnOfSlot: [Int?]
    private let fetchSQL: String
    /// Saves a row whose non-key columns share one clock, or one with a clock per column; each
    /// replacing what the row held, or only where it holds nothing; by `saveSlot`.
    private let saveSQL: [String]
    private var fetchStatement: RawStatement?
    private var saveStatements = [RawStatement?](repeating: nil, count: 4)
    /// The epoch tombstones saved in this access are stamped with (`Tombstones`), once read.
    private var epoch: Int64?
    /// What `saveNew` did in this access: rows it saved, and rows it found metadata for.
    private var newRows = 0
    private var rowsFound = 0

    /// The columns a fetch reads, in order (Bookkeeping.rowMetadataTable): generation, shared
    /// clock (two columns), per-column clocks, shared-clock width, hash; `metadata(_:at:)` reads
    /// them at the offsets below.
    private static let fetchColumns = ["gen", "t", "o", "c", "w", "h"]
    private static let generationAt: Int32 = 0
    private static let sharedAt: Int32 = 1
    private static let clocksAt: Int32 = 3
    private static let widthAt: Int32 = 4
    private static let hashAt: Int32 = 5

    /// `digests` receives each save's change to the table's row digest. A store that only fetches
    /// needs none, nor one whose caller has every table counted again after (a migration's fold).
    init(table: TrackedTable, origins: OriginNumbers, digests: RowDigests?) {
        self.table = table
        self.origins = origins
        self.digests = digests
        let nonKey = table.columns.indices.filter { !table.keyIndexes.contains($0) }
        self.nonKey = nonKey
        nonKeyBySlot = nonKey.sorted { table.slots[$0] < table.slots[$1] }
        var columnOfSlot = [Int?](repeating: nil, count: table.slotCount)
        for column in nonKey { columnOfSlot[table.slots[column]] = column }
        self.columnOfSlot = columnOfSlot
        let name = Bookkeeping.rowMetadataTable(table)
        let keyMatch = table.keyIndexes.indices.map { "k\($0) = ?" }.joined(separator: " AND ")
        fetchSQL = "SELECT \(Self.fetchColumns.joined(separator: ", ")) FROM \(name) WHERE \(keyMatch)"
        let keys = table.keyIndexes.indices.map { "k\($0)" }
        // Each names only the columns it sets: the others of the row it replaces become NULL.
        let shared = keys + ["gen", "t", "o", "w", "h"]
        let perColumn = keys + ["gen", "c", "w", "h"]
        var saveSQL = [String](repeating: "", count: 4)
        for isShared in [false, true] {
            let columns = isShared ? shared : perColumn
            let target =
                "\(name)(\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
            saveSQL[Self.saveSlot(shared: isShared, replacing: true)] = "INSERT OR REPLACE INTO " + target
            saveSQL[Self.saveSlot(shared: isShared, replacing: false)] =
                "INSERT INTO " + target + " ON CONFLICT DO NOTHING"
        }
        self.saveSQL = saveSQL
    }

    /// The metadata of the row with `key` (values in key order), or generation 0 if never seen.
    func fetch(_ db: Database, key: [SQLValue]) throws -> RowMetadata {
        let statement = try RawStatement.reusing(&fetchStatement, db) { fetchSQL }
        try statement.bind(key)
        guard try statement.step() else {
            return .unseen(columnCount: table.columns.count)
        }
        return try metadata(statement, at: 0)
    }

    /// The columns of the row metadata table that `metadata(_:at:)` reads, in its order, each
    /// prefixed with `qualifier` (a table alias and a dot, for a join).
    func selectedColumns(qualifiedBy qualifier: String) -> [String] {
        Self.fetchColumns.map { qualifier + $0 }
    }

    /// The metadata held by `selectedColumns`, read from the current row of `statement` starting
    /// at column `offset`.
    func metadata(_ statement: RawStatement, at offset: Int32) throws -> RowMetadata {
        var clocks = [MergeClock?](repeating: nil, count: table.columns.count)
        let hash = statement.optionalInt64(offset + Self.hashAt)
        if let shared = try clock(statement, offset + Self.sharedAt) {
            // A row saved before a migration added columns: its shared clock covers the old ones.
            let width = table.sharedClockWidth.map { Int(statement.optionalInt64(offset + Self.widthAt) ?? Int64($0)) }
            for column in nonKey where table.slots[column] < width ?? Int.max { clocks[column] = shared }
        } else {
            try statement.withBlob(offset + Self.clocksAt) { bytes in
                try ColumnClocks.decode(bytes, table: table.name) { entry in
                    guard entry.slot < columnOfSlot.count, let column = columnOfSlot[entry.slot],
                        let origin = try origins.origin(entry.origin)
                    else { return }
                    clocks[column] = MergeClock(timestamp: HLCTimestamp(packed: entry.timestamp), origin: origin)
                }
            }
        }
        return RowMetadata(
            generation: statement.int64(offset + Self.generationAt), clocks: clocks, rowHash: hash,
            saved: .init(hash: hash, exists: true))
    }

    /// Stores the metadata of the row with `key`, and replaces its hash in the table's row digest.
    func save(_ db: Database, key: [SQLValue], _ metadata: inout RowMetadata) throws {
        _ = try save(db, key: key, &metadata, replacing: true)
    }

    /// Stores the metadata of the row with `key` when the store holds none for it, and adds its
    /// hash to the table's row digest; returns false, changing nothing, when it holds some. It
    /// saves the read a merge or a fold would make to learn the row is new.
    func saveNew(_ db: Database, key: [SQLValue], _ metadata: inout RowMetadata) throws -> Bool {
        let saved = try save(db, key: key, &metadata, replacing: false)
        if saved { newRows += 1 } else { rowsFound += 1 }
        return saved
    }

    /// Takes back the metadata `saveNew` saved for the row with `key` (`metadata` as it left it),
    /// and its hash from the row digest: the row's write was refused, to be merged again later.
    func takeBackNew(_ db: Database, key: [SQLValue], _ metadata: RowMetadata) throws {
        let statement = try RawStatement.reusing(&removeStatement, db) { removeSQL }
        try statement.bind(key)
        try statement.execute()
        digests?.replace(table: table, old: metadata.saved, new: nil)
        newRows -= 1
    }

    /// Whether a row life that starts in this table is worth taking as a new row first (`saveNew`),
    /// which spares the read that finds no metadata, and costs a statement when it finds some: until
    /// such finds outnumber the new rows by 16, so that they cost at most 16 statements more than the
    /// new rows spared.
    var expectsNewRows: Bool { rowsFound < newRows + 16 }

    /// Which of the four save statements: a shared clock or one per column, replacing the row's
    /// metadata or adding it only where there is none.
    private static func saveSlot(shared: Bool, replacing: Bool) -> Int { (shared ? 2 : 0) + (replacing ? 1 : 0) }

    private func save(_ db: Database, key: [SQLValue], _ metadata: inout RowMetadata, replacing: Bool) throws -> Bool {
        let clocks = try storedClocks(db, metadata)
        let slot: Int
        if case .perColumn = clocks {
            slot = Self.saveSlot(shared: false, replacing: replacing)
        } else {
            slot = Self.saveSlot(shared: true, replacing: replacing)
        }
        let statement = try RawStatement.reusing(&saveStatements[slot], db) { saveSQL[slot] }
        var index = Int32(key.count) + 2
        switch clocks {
        case .shared(let timestamp, let origin):
            try statement.bind(timestamp, at: index)
            try statement.bind(origin, at: index + 1)
            index += 2
        case .perColumn(let blob):
            try statement.bind(blob, at: index)
            index += 1
        }
        try statement.bind(key)
        try statement.bind(metadata.generation, at: Int32(key.count) + 1)
        try statement.bind(width, at: index)
        index += 1
        try statement.bind(metadata.rowHash, at: index)
        try statement.execute()
        if !replacing && db.changesCount == 0 { return false }
        digests?.replace(table: table, old: metadata.saved, new: metadata.rowHash)
        metadata.saved = .init(hash: metadata.rowHash, exists: true)
        return true
    }

    /// How a row's clocks are stored: in `t` and `o` (one clock shared by every non-key column,
    /// or a tombstone's epoch and no origin), or per column in `c`.
    private enum StoredClocks {
        case shared(Int64?, Int64?)
        case perColumn(SQLValue)
    }

    private func storedClocks(_ db: Database, _ metadata: RowMetadata) throws -> StoredClocks {
        if !metadata.isAlive {
            // A tombstone has no clock: `t` holds the epoch that says when it may be dropped.
            if epoch == nil { epoch = try Tombstones.openEpoch(db) }
            return .shared(epoch, nil)
        }
        if let first = nonKey.first.flatMap({ metadata.clocks[$0] }),
            nonKey.allSatisfy({ metadata.clocks[$0] == first })
        {
            // One write set every column: one shared clock, `c` stays NULL.
            return .shared(first.timestamp.packed, try origins.number(of: first.origin))
        }
        var entries: [ColumnClocks.Entry] = []
        entries.reserveCapacity(nonKeyBySlot.count)
        for column in nonKeyBySlot {
            guard let clock = metadata.clocks[column] else { continue }
            entries.append(
                .init(
                    slot: table.slots[column], timestamp: clock.timestamp.packed,
                    origin: try origins.number(of: clock.origin)))
        }
        return .perColumn(entries.isEmpty ? .null : .blob(ColumnClocks.encode(entries)))
    }

    /// The shared clock's width every save records: the slots a shared clock covers, where a
    /// migration may add columns after it (nil: every column).
    private var width: Int64? { table.sharedClockWidth == nil ? nil : Int64(table.slotCount) }

    // MARK: - New rows, many to a statement

    /// The values `insertNew` takes for one row: `metadata` of the row with `key` (values in key
    /// order), appended to `values`: the key, then the columns a fetch reads, in its order.
    func appendNewRow(_ db: Database, key: [SQLValue], _ metadata: RowMetadata, to values: inout [SQLValue]) throws {
        values.append(contentsOf: key)
        values.append(.integer(metadata.generation))
        switch try storedClocks(db, metadata) {
        case .shared(let timestamp, let origin):
            values.append(timestamp.map(SQLValue.integer) ?? .null)
            values.append(origin.map(SQLValue.integer) ?? .null)
            values.append(.null)
        case .perColumn(let blob):
            values.append(.null)
            values.append(.null)
            values.append(blob)
        }
        values.append(width.map(SQLValue.integer) ?? .null)
        values.append(metadata.rowHash.map(SQLValue.integer) ?? .null)
    }

    /// The number of values `appendNewRow` appends per row.
    var newRowWidth: Int { table.keyIndexes.count + Self.fetchColumns.count }

    /// Adds the metadata of `count` rows (`values` made by `appendNewRow`) in one statement,
    /// where the store holds none for any of them; returns false, having changed nothing, when it
    /// holds some for one (or two of them share a key). Neither the row digest nor `expectsNewRows`
    /// hears of them until `noteNew`: the caller may still take them back with `removeNew`.
    func insertNew(_ db: Database, _ values: [SQLValue], count: Int) throws -> Bool {
        if newRowInsert == nil {
            newRowInsert = MultiRowInsert(
                db, into: Bookkeeping.rowMetadataTable(table),
                columns: table.keyIndexes.indices.map { "k\($0)" } + Self.fetchColumns)
        }
        return try newRowInsert!.insertUnlessRefused(values, count: count)
    }

    /// Removes the metadata `insertNew` added for the rows of `values`, which it left as the
    /// only metadata of their keys.
    func removeNew(_ db: Database, _ values: [SQLValue], count: Int) throws {
        let statement = try RawStatement.reusing(&removeStatement, db) { removeSQL }
        for row in 0..<count {
            statement.reset()
            try statement.bind(values[(row * newRowWidth)..<(row * newRowWidth + table.keyIndexes.count)])
            try statement.execute()
        }
    }

    /// Counts rows `insertNew` added for good, with these hashes, into the row digest and
    /// `expectsNewRows`.
    func noteNew(hashes: [Int64?]) {
        for hash in hashes { digests?.replace(table: table, old: .init(hash: nil, exists: false), new: hash) }
        newRows += hashes.count
    }

    private var newRowInsert: MultiRowInsert?
    private var removeStatement: RawStatement?
    private var removeSQL: String {
        let keyMatch = table.keyIndexes.indices.map { "k\($0) = ?" }.joined(separator: " AND ")
        return "DELETE FROM \(Bookkeeping.rowMetadataTable(table)) WHERE \(keyMatch)"
    }

    /// The clock stored in columns `index` (packed timestamp) and `index + 1` (origin number).
    private func clock(_ statement: RawStatement, _ index: Int32) throws -> MergeClock? {
        guard let packed = statement.optionalInt64(index), let number = statement.optionalInt64(index + 1),
            let id = try origins.origin(number)
        else { return nil }
        return MergeClock(timestamp: HLCTimestamp(packed: packed), origin: id)
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension RowMetadataStore: Sendable {}
