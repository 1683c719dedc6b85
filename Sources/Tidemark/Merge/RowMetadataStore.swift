import Foundation
import GRDB
import TidemarkCore

/// Reads and writes one tracked table's row metadata, with statements prepared once per access.
final class RowMetadataStore {
    let table: TrackedTable
    private let nonKey: [Int]
    private let origins: OriginNumbers
    private let digests: RowDigests?
    /// The columns a fetch reads, in order: generation, clocks, shared-clock width, hash.
    private let fetchColumns: [String]
    private let fetchSQL: String
    /// Saves a row whose non-key columns share one clock, or one with a clock per column; each
    /// replacing what the row held, or only where it holds nothing; by `saveSlot`.
    private let saveSQL: [String]
    private var fetchStatement: RawStatement?
    private var saveStatements = [RawStatement?](repeating: nil, count: 4)
    /// The column of `h` in the fetch.
    private let hashIndex: Int32
    /// The epoch tombstones saved in this access are stamped with (`Tombstones`), once read.
    private var epoch: Int64?
    /// What `saveNew` did in this access: rows it saved, and rows it found metadata for.
    private var newRows = 0
    private var rowsFound = 0

    /// `digests` receives each save's change to the table's row digest. A store that only fetches
    /// needs none, nor one whose caller has every table counted again after (a migration's fold).
    init(table: TrackedTable, origins: OriginNumbers, digests: RowDigests?) {
        self.table = table
        self.origins = origins
        self.digests = digests
        let nonKey = table.columns.indices.filter { !table.keyIndexes.contains($0) }
        self.nonKey = nonKey
        let name = Bookkeeping.rowMetadataTable(table)
        let keyMatch = table.keyIndexes.indices.map { "k\($0) = ?" }.joined(separator: " AND ")
        // After a migration added columns, `w` says how many columns a row's shared clock covers.
        let width = table.sharedClockWidth == nil ? [] : ["w"]
        let clocks = ["t", "o"] + nonKey.flatMap { ["t\(table.slots[$0])", "o\(table.slots[$0])"] }
        fetchColumns = ["gen"] + clocks + width + ["h"]
        fetchSQL = "SELECT \(fetchColumns.joined(separator: ", ")) FROM \(name) WHERE \(keyMatch)"
        let keys = table.keyIndexes.indices.map { "k\($0)" }
        // Each names only the columns it sets: the others of the row it replaces become NULL.
        let shared = keys + ["gen", "t", "o"] + width + ["h"]
        let perColumn = keys + ["gen"] + clocks.dropFirst(2) + width + ["h"]
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
        hashIndex = Int32(1 + clocks.count + width.count)
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
        fetchColumns.map { qualifier + $0 }
    }

    /// The metadata held by `selectedColumns`, read from the current row of `statement` starting
    /// at column `offset`.
    func metadata(_ statement: RawStatement, at offset: Int32) throws -> RowMetadata {
        var clocks = [MergeClock?](repeating: nil, count: table.columns.count)
        let hash = statement.optionalInt64(offset + hashIndex)
        if let shared = try clock(statement, offset + 1) {
            // A row saved before a migration added columns: its shared clock covers the old ones.
            let width = table.sharedClockWidth.map {
                Int(statement.optionalInt64(offset + Int32(3 + 2 * nonKey.count)) ?? Int64($0))
            }
            for column in nonKey where table.slots[column] < width ?? Int.max { clocks[column] = shared }
        } else {
            for (n, column) in nonKey.enumerated() { clocks[column] = try clock(statement, offset + Int32(3 + 2 * n)) }
        }
        return RowMetadata(
            generation: statement.int64(offset), clocks: clocks, rowHash: hash, saved: .init(hash: hash, exists: true))
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

    /// Whether a row life that starts in this table is worth taking as a new row first (`saveNew`),
    /// which spares the read that finds no metadata, and costs a statement when it finds some: until
    /// such finds outnumber the new rows by 16, so that they cost at most 16 statements more than the
    /// new rows spared.
    var expectsNewRows: Bool { rowsFound < newRows + 16 }

    /// Which of the four save statements: a shared clock or one per column, replacing the row's
    /// metadata or adding it only where there is none.
    private static func saveSlot(shared: Bool, replacing: Bool) -> Int { (shared ? 2 : 0) + (replacing ? 1 : 0) }

    private func save(_ db: Database, key: [SQLValue], _ metadata: inout RowMetadata, replacing: Bool) throws -> Bool {
        let first = nonKey.first.flatMap { metadata.clocks[$0] }
        let statement: RawStatement
        var index = Int32(key.count) + 2
        let shared = Self.saveSlot(shared: true, replacing: replacing)
        if !metadata.isAlive {
            // A tombstone has no clock: `t` holds the epoch that says when it may be dropped.
            if epoch == nil { epoch = try Tombstones.openEpoch(db) }
            statement = try RawStatement.reusing(&saveStatements[shared], db) { saveSQL[shared] }
            try statement.bind(epoch, at: index)
            try statement.bind(nil as Int64?, at: index + 1)
            index += 2
        } else if let first, nonKey.allSatisfy({ metadata.clocks[$0] == first }) {
            // One write set every column: one shared clock, the per-column pairs stay NULL.
            statement = try RawStatement.reusing(&saveStatements[shared], db) { saveSQL[shared] }
            try statement.bind(first.timestamp.packed, at: index)
            try statement.bind(try origins.number(of: first.origin), at: index + 1)
            index += 2
        } else {
            let perColumn = Self.saveSlot(shared: false, replacing: replacing)
            statement = try RawStatement.reusing(&saveStatements[perColumn], db) { saveSQL[perColumn] }
            for column in nonKey {
                let clock = metadata.clocks[column]
                try statement.bind(clock?.timestamp.packed, at: index)
                try statement.bind(try clock.map { try origins.number(of: $0.origin) }, at: index + 1)
                index += 2
            }
        }
        try statement.bind(key)
        try statement.bind(metadata.generation, at: Int32(key.count) + 1)
        if table.sharedClockWidth != nil {
            try statement.bind(Int64(table.slotCount), at: index)
            index += 1
        }
        try statement.bind(metadata.rowHash, at: index)
        try statement.execute()
        if !replacing && db.changesCount == 0 { return false }
        digests?.replace(table: table, old: metadata.saved, new: metadata.rowHash)
        metadata.saved = .init(hash: metadata.rowHash, exists: true)
        return true
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
