import Foundation
import GRDB
import TidemarkCore

/// The one writer of history rows: each transaction's row in `tidemark_transactions` (sealed here
/// or imported), and the change rows that no capture trigger writes (imported changes, and the
/// deletes that settle a conflict). Local writes reach `tidemark_changes` through `CaptureTriggers`.
final class HistoryWriter {
    let db: Database
    /// Per registration: the columns one of its changes is recorded in, and its number of mask
    /// words and slots.
    private let layouts: [Int64: (columns: [String], words: Int, slots: Int)]
    /// Per registration: the statements that record its changes.
    private var inserts: [Int64: MultiRowInsert] = [:]
    /// Changes of one registration waiting to be recorded, many to a statement: each one's id,
    /// table id, op, generation, mask words and slot values.
    private var pending: (table: Int64, count: Int, capacity: Int)?
    private var values: [SQLValue] = []

    /// A writer of changes in the slots of `registrations` (every table ever tracked).
    init(db: Database, registrations: [TrackedTable]) {
        self.db = db
        layouts = Dictionary(
            uniqueKeysWithValues: registrations.map { table in
                let words = ColumnMask.wordCount(slots: table.slotCount)
                let columns =
                    ["id", "table_id", "op", "gen"] + (0..<words).map(Bookkeeping.maskColumn)
                    + (0..<table.slotCount).map(Bookkeeping.valueColumn)
                return (table.id, (columns, words, table.slotCount))
            })
    }

    /// Records one change as change `id`, in the slots `translation` gives its column names, with
    /// its generation. It is written with the changes recorded after it, at the latest by `flush`,
    /// which must run before anything reads `tidemark_changes`.
    func record(_ change: History.Change, as translation: SchemaTranslations.Translation, id: Int64) throws {
        let (_, words, slots) = layouts[translation.id]!
        if let pending, pending.table != translation.id { try flush() }
        // Filled as a local array and put back: each access to a property of a class is checked
        // for exclusivity at run time, and a change makes a dozen.
        var row: [SQLValue] = []
        swap(&row, &values)
        let start = row.count
        row.append(.integer(id))
        row.append(.integer(translation.id))
        let op: Bookkeeping.Op = change.type == .insert ? .insert : change.type == .update ? .update : .delete
        row.append(.integer(op.rawValue))
        row.append(.integer(change.generation))
        row.append(contentsOf: repeatElement(.integer(0), count: words))
        row.append(contentsOf: repeatElement(.null, count: slots))
        let slotStart = start + 4 + words
        var mask = ColumnMask()
        func carry(_ columns: [History.Column], _ list: Int) {
            for (column, slot) in zip(columns, translation.slots(of: columns, list)) {
                guard let slot else { continue }
                row[slotStart + slot] = column.value
                mask.insert(slot)
            }
        }
        switch change.type {
        case .insert, .update:
            carry(change.key, 0)
            carry(change.values, 1)
        case .delete: carry(change.tombstone ?? change.key, 2)
        }
        for (i, word) in mask.words.prefix(words).enumerated() { row[start + 4 + i] = .integer(word) }
        swap(&row, &values)
        if pending == nil {
            pending = (translation.id, 0, MultiRowInsert.rowsPerStatement(width: 4 + words + slots, db))
        }
        pending!.count += 1
        if pending!.count == pending!.capacity { try flush() }
    }

    /// Writes the changes `record` holds.
    func flush() throws {
        guard let (table, count, _) = pending else { return }
        pending = nil
        defer { values.removeAll(keepingCapacity: true) }
        if inserts[table] == nil {
            inserts[table] = MultiRowInsert(db, into: "tidemark_changes", columns: layouts[table]!.columns)
        }
        try inserts[table]!.insert(values, count: count)
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
