import TidemarkCore

/// The merge rules of Protocol/merge.md §1–§4 as a pure function of a *set* of transactions: what
/// every replica holding exactly that set must hold, whatever order it received them in.
///
/// Per row identity: the greatest generation among its changes wins (§2, §4.1, §4.2); an even one
/// means the row is absent; an odd one means each non-key column takes the value of the change with
/// the greatest clock (§1.3) among that generation's changes that carry it (§4.3). Within one
/// transaction (one clock) a later change of the same row beats an earlier one, as the origin folded
/// them in commit order (§3).
///
/// Constraint resolutions (§5) need no logic here: they are ordinary delete transactions in the set.
/// Deliberately independent of the engine: it compares clocks and replica ids itself.
public struct ReferenceModel: Sendable {
    /// The shape of a tracked table.
    public struct Table: Sendable, Hashable {
        /// The table name.
        public var name: String
        /// Every column, in table order.
        public var columns: [String]
        /// The primary-key columns, in key order.
        public var keyColumns: [String]

        /// Creates a table shape.
        public init(name: String, columns: [String], keyColumns: [String]) {
            self.name = name
            self.columns = columns
            self.keyColumns = keyColumns
        }
    }

    /// What a schema version renamed: transactions written before it name `table` and its
    /// `columns` by their old names (Protocol/schema.md §6).
    public struct Rename: Sendable, Hashable {
        /// The version's position.
        public var position: Int
        /// The table's name before the version.
        public var table: String
        /// Its name after, when the version renamed it.
        public var newTable: String?
        /// Old column name to new.
        public var columns: [String: String]
        public init(position: Int, table: String, newTable: String? = nil, columns: [String: String] = [:]) {
            self.position = position
            self.table = table
            self.newTable = newTable
            self.columns = columns
        }
    }

    /// A transaction's identity: (origin, sequence).
    public struct TransactionID: Hashable, Sendable, Comparable, CustomStringConvertible {
        public var origin: Replica.ID
        public var sequence: Int64
        public init(origin: Replica.ID, sequence: Int64) {
            self.origin = origin
            self.sequence = sequence
        }
        public static func < (lhs: Self, rhs: Self) -> Bool {
            lhs.origin.bytes != rhs.origin.bytes
                ? lhs.origin.bytes.lexicographicallyPrecedes(rhs.origin.bytes) : lhs.sequence < rhs.sequence
        }
        public var description: String { "\(origin.short)#\(sequence)" }
    }

    /// The order of writes: (timestamp, origin id bytes) as §1.3 says, then the change's position in
    /// its transaction.
    public struct WriteOrder: Hashable, Sendable, Comparable {
        public var timestamp: HLCTimestamp
        public var origin: [UInt8]
        public var position: Int
        public static func < (lhs: Self, rhs: Self) -> Bool {
            if lhs.timestamp.milliseconds != rhs.timestamp.milliseconds {
                return lhs.timestamp.milliseconds < rhs.timestamp.milliseconds
            }
            if lhs.timestamp.counter != rhs.timestamp.counter { return lhs.timestamp.counter < rhs.timestamp.counter }
            if lhs.origin != rhs.origin { return lhs.origin.lexicographicallyPrecedes(rhs.origin) }
            return lhs.position < rhs.position
        }
    }

    /// One change of one row, with where it came from.
    public struct Write: Sendable, Hashable {
        public var transaction: TransactionID
        public var order: WriteOrder
        public var type: History.ChangeType
        public var generation: Int64
        /// Non-key columns carried (insert: all; update: the changed ones; delete: none).
        public var values: [String: SQLValue]
        /// Whether the transaction is a conflict resolution (author `tidemark`, context `conflict`).
        public var isResolution: Bool
    }

    /// A row identity.
    public struct RowID: Hashable, Sendable, Comparable, CustomStringConvertible {
        public var table: String
        public var key: [SQLValue]
        public init(table: String, key: [SQLValue]) {
            self.table = table
            self.key = key
        }
        public static func < (lhs: Self, rhs: Self) -> Bool {
            lhs.table != rhs.table ? lhs.table < rhs.table : lhs.key.description < rhs.key.description
        }
        public var description: String { "\(table)\(key)" }
    }

    /// What the rules make of one row.
    public struct Outcome: Sendable, Hashable {
        /// The greatest generation among the row's changes.
        public var generation: Int64
        /// The non-key values when the row lives (generation odd), nil when it is deleted.
        public var values: [String: SQLValue]?
        /// Per column, the write whose value it holds.
        public var winners: [String: Write]
    }

    /// The table shapes, by name.
    public let tables: [String: Table]
    /// The transactions, by identity.
    public private(set) var transactions: [TransactionID: History.Transaction] = [:]
    /// Every change, by row.
    public private(set) var writes: [RowID: [Write]] = [:]
    /// Transactions offered twice with different contents (must stay empty).
    public private(set) var mismatches: [TransactionID] = []
    /// Changes without a generation (a local change never folded; must stay empty).
    public private(set) var unfolded: [(TransactionID, RowID)] = []

    /// The renames of later schema versions, oldest first.
    public let renames: [Rename]
    /// Per table, the defaults of columns added by a migration: what a row reads there when no
    /// write of its life set it.
    public let defaults: [String: [String: SQLValue]]

    /// An empty model over `tables` (their newest shape); transactions written under older schema
    /// versions are read through `renames`.
    public init(tables: [Table], renames: [Rename] = [], defaults: [String: [String: SQLValue]] = [:]) {
        self.tables = Dictionary(uniqueKeysWithValues: tables.map { ($0.name, $0) })
        self.renames = renames.sorted { $0.position < $1.position }
        self.defaults = defaults
    }

    /// A change as the newest version names it.
    func renamed(_ change: History.Change, writtenAt position: Int) -> History.Change {
        var change = change
        for rename in renames where rename.position > position && rename.table == change.table {
            let column = { (c: History.Column) in History.Column(rename.columns[c.name] ?? c.name, c.value) }
            change.key = change.key.map(column)
            change.values = change.values.map(column)
            change.tombstone = change.tombstone?.map(column)
            change.table = rename.newTable ?? change.table
        }
        return change
    }

    /// Adds transactions, deduplicated by (origin, sequence).
    public mutating func add<S: Sequence>(_ transactions: S) where S.Element == History.Transaction {
        for transaction in transactions { add(transaction) }
    }

    /// Adds one transaction; a second copy only checks that its content is the same.
    public mutating func add(_ transaction: History.Transaction) {
        let id = TransactionID(origin: transaction.origin, sequence: transaction.sequence)
        if let known = transactions[id] {
            if !Self.sameFacts(known, transaction) { mismatches.append(id) }
            return
        }
        transactions[id] = transaction
        let isResolution = transaction.author == "tidemark" && transaction.contextName == "conflict"
        for (position, written) in transaction.changes.enumerated() {
            let change = renamed(written, writtenAt: transaction.schemaVersion?.position ?? 0)
            guard let table = tables[change.table] else { continue }
            let row = RowID(table: change.table, key: change.key.map(\.value))
            if change.generation == 0 { unfolded.append((id, row)) }
            let keyNames = Set(table.keyColumns)
            var values: [String: SQLValue] = [:]
            if change.type != .delete {
                for column in change.values where !keyNames.contains(column.name) { values[column.name] = column.value }
            }
            writes[row, default: []].append(
                Write(
                    transaction: id,
                    order: WriteOrder(
                        timestamp: transaction.timestamp, origin: transaction.origin.bytes, position: position),
                    type: change.type, generation: change.generation, values: values, isResolution: isResolution))
        }
    }

    /// Same origin, sequence, timestamp, metadata and changes (the token depends on the holder).
    static func sameFacts(_ a: History.Transaction, _ b: History.Transaction) -> Bool {
        a.origin == b.origin && a.sequence == b.sequence && a.timestamp == b.timestamp && a.author == b.author
            && a.contextName == b.contextName && a.processID == b.processID && a.changes == b.changes
    }

    // MARK: - The rules

    /// What the rules make of `row` (§4 applied to the whole set at once).
    public func outcome(of row: RowID) -> Outcome? {
        guard let changes = writes[row], let table = tables[row.table] else { return nil }
        let generation = changes.map(\.generation).max()!
        guard generation % 2 == 1 else { return Outcome(generation: generation, values: nil, winners: [:]) }
        let life = changes.filter { $0.generation == generation }
        var values: [String: SQLValue] = [:]
        var winners: [String: Write] = [:]
        for column in table.columns where !table.keyColumns.contains(column) {
            guard let winner = life.filter({ $0.values[column] != nil }).max(by: { $0.order < $1.order }) else {
                continue
            }
            values[column] = winner.values[column]
            winners[column] = winner
        }
        return Outcome(generation: generation, values: values, winners: winners)
    }

    /// Every live row of every table: table → key → all columns in table order (a column no write of
    /// the row's life carries reads its default when a migration added it, NULL otherwise).
    public func rows() -> [String: [[SQLValue]: [SQLValue]]] {
        var result: [String: [[SQLValue]: [SQLValue]]] = [:]
        for table in tables.keys { result[table] = [:] }
        for row in writes.keys {
            guard let table = tables[row.table], let values = outcome(of: row)?.values else { continue }
            var full: [SQLValue] = []
            for column in table.columns {
                if let k = table.keyColumns.firstIndex(of: column) {
                    full.append(row.key[k])
                } else {
                    full.append(values[column] ?? defaults[row.table]?[column] ?? .null)
                }
            }
            result[row.table]![row.key] = full
        }
        return result
    }

    // MARK: - Direct statements of the guarantees

    /// A write to one column that nothing in the set supersedes.
    public struct Survivor: Sendable, Hashable {
        public var row: RowID
        public var column: String
        public var value: SQLValue
        public var write: Write
    }

    /// "No write is lost unless a later write to the same column of the same life, or a delete it
    /// had not seen, or a life started above a higher generation floor supersedes it" (merge.md,
    /// Consequences): every (write, column) such that no write of the same row and generation
    /// carrying the column orders after it, and no change of a greater generation exists. (Without
    /// floors a greater generation implies a delete of one; with them, an insert on a replica that
    /// dropped tombstones starts above its floor.) Each must be visible on every replica.
    public func survivors() -> [Survivor] {
        var result: [Survivor] = []
        for (row, changes) in writes {
            let newest = changes.map(\.generation).max() ?? 0
            for write in changes where write.type != .delete {
                if write.generation < newest { continue }
                for (column, value) in write.values {
                    let superseded = changes.contains {
                        $0.generation == write.generation && $0.values[column] != nil && write.order < $0.order
                    }
                    if !superseded { result.append(Survivor(row: row, column: column, value: value, write: write)) }
                }
            }
        }
        return result.sorted { ($0.row, $0.column) < ($1.row, $1.column) }
    }

    /// Whether the write that `column` of `row` holds shares its transaction (its clock) with an
    /// earlier change of the same row carrying the same column: the case where a receiver that
    /// applies only strictly newer clocks keeps the earlier value.
    public func winnerSharesClock(_ row: RowID, _ column: String) -> Bool {
        guard let winner = outcome(of: row)?.winners[column] else { return false }
        return (writes[row] ?? []).contains {
            $0.transaction == winner.transaction && $0.values[column] != nil && $0.order < winner.order
        }
    }

    /// Rows whose greatest generation is even: deleted, and absent from every replica.
    public func deletedRows() -> [RowID] {
        writes.compactMap { row, changes in changes.map(\.generation).max()! % 2 == 0 ? row : nil }.sorted()
    }

    /// The conflict-resolution deletes in the set: (resolving replica, row, generation).
    public func resolutions() -> [(resolver: Replica.ID, row: RowID, generation: Int64)] {
        writes.flatMap { row, changes in
            changes.filter { $0.isResolution && $0.type == .delete }.map { ($0.transaction.origin, row, $0.generation) }
        }.sorted { ($0.row, $0.generation) < ($1.row, $1.generation) }
    }
}

extension ReferenceModel.RowID {
    /// The key values rendered compactly: `users['u1']`.
    public var compact: String { table + "[" + key.map(\.description).joined(separator: ", ") + "]" }
}
