import Foundation
import GRDB
import TidemarkCore

/// The one writer of history rows: each transaction's row in `tidemark_transactions` (sealed here
/// or imported), and the change rows that no capture trigger writes (imported changes, and the
/// deletes that settle a conflict). Local writes reach `tidemark_changes` through `CaptureTriggers`.
final class HistoryWriter {
    let db: Database
    /// Per registration: the statement that records one of its changes, and its number of mask
    /// words and slots.
    private let changeSQL: [Int64: (sql: String, words: Int, slots: Int)]
    /// Per registration: that statement, prepared on first use.
    private var statements: [Int64: RawStatement] = [:]
    /// The slot values of the change being recorded, kept to reuse its storage.
    private var values: [SQLValue] = []

    /// A writer of changes in the slots of `registrations` (every table ever tracked).
    init(db: Database, registrations: [TrackedTable]) {
        self.db = db
        changeSQL = Dictionary(
            uniqueKeysWithValues: registrations.map { table in
                let words = ColumnMask.wordCount(slots: table.slotCount)
                let columns =
                    ((0..<words).map(Bookkeeping.maskColumn) + (0..<table.slotCount).map(Bookkeeping.valueColumn))
                    .joined(separator: ", ")
                let placeholders = Array(repeating: "?", count: words + table.slotCount + 3).joined(separator: ", ")
                let sql = "INSERT INTO tidemark_changes(table_id, op, gen, \(columns)) VALUES (\(placeholders))"
                return (table.id, (sql, words, table.slotCount))
            })
    }

    /// Records one change in the slots `translation` gives its column names, with its generation;
    /// returns its change id.
    func record(_ change: History.Change, as translation: SchemaTranslations.Translation) throws -> Int64 {
        let (sql, words, slots) = changeSQL[translation.id]!
        values.removeAll(keepingCapacity: true)
        values.append(contentsOf: repeatElement(.null, count: slots))
        var mask = ColumnMask()
        func carry(_ columns: [History.Column]) {
            for column in columns {
                guard let slot = translation.slots[column.name] else { continue }
                values[slot] = column.value
                mask.insert(slot)
            }
        }
        switch change.type {
        case .insert, .update:
            carry(change.key)
            carry(change.values)
        case .delete: carry(change.tombstone ?? change.key)
        }
        let op: Bookkeeping.Op = change.type == .insert ? .insert : change.type == .update ? .update : .delete
        let statement = try RawStatement.reusing(&statements[translation.id], db) { sql }
        try statement.bind(translation.id, at: 1)
        try statement.bind(op.rawValue, at: 2)
        try statement.bind(change.generation, at: 3)
        for (i, word) in mask.words(count: words).enumerated() { try statement.bind(word, at: Int32(4 + i)) }
        try statement.bind(values, from: Int32(4 + words))
        try statement.execute()
        return statement.lastInsertedRowID
    }

    /// Records a transaction that owns the change ids `first` through `last` (none when `first` is
    /// past `last`). `chain` is its chain hash when it came with one (an import); this replica's
    /// own transactions get theirs when they are first exported (`Chains`). `schemaPosition` nil
    /// is the store's current schema version.
    static func recordTransaction(
        _ db: Database, origin: Replica.ID, sequence: Int64, timestamp: HLCTimestamp, authorship: Sealer.Authorship,
        changes first: Int64, through last: Int64, chain: [UInt8]? = nil, schemaPosition: Int? = nil
    ) throws {
        // Runs on every write through the API: prepared once per connection.
        try db.cachedStatement(
            sql: """
                INSERT INTO tidemark_transactions(replica, seq, hlc, author, context, pid, first_change, last_change, chain, schema)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?, (SELECT coalesce(max(position), 0) FROM tidemark_schemas)))
                """
        ).execute(arguments: [
            origin, sequence, timestamp.packed, authorship.author, authorship.contextName, authorship.processID,
            first, last, chain.map { Data($0) }, schemaPosition,
        ])
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension HistoryWriter: Sendable {}
