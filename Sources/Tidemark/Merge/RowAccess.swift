import GRDB
import TidemarkCore

/// Reads and writes user rows by key, for the merge engine (capture is paused while it runs), with statements prepared once per access.
final class RowAccess {
    let db: Database
    let table: TrackedTable
    private let quotedTable: String
    private let keyMatch: String
    private let keyColumns: String
    private let selectSQL: String
    private let deleteSQL: String
    /// The statements of `selectSQL` and `deleteSQL`, prepared on first use.
    private var select: RawStatement?
    private var deleteStatement: RawStatement?
    /// Made on the first hash: it reads the columns' declared types.
    private var madeHasher: RowHasher?
    /// Whether a row this access writes may be hashed as SQLite writes it (`PreUpdateRow`): only on
    /// a connection Tidemark opened.
    private let catchesWrittenRows: Bool
    /// Catches the row an update or upsert writes, made on the first; nil once known unavailable.
    private var catcher: PreUpdateRow??
    /// The key and hash of the row the last update or upsert wrote, as caught; taken by the next
    /// hash of that row.
    private var caught: (key: [SQLValue], hash: Int64)?
    /// Where the rows this access writes and deletes are noted, for the orphans they may leave
    /// (`ForeignKeys`); nil where no one asks.
    var touched: TouchedRows?
    /// Where the rows a foreign-key action changes, as this access deletes or updates rows, are
    /// noted, and the rows it writes after them; nil where no one asks.
    var effects: ActionEffects? {
        didSet { watched = effects?.watches(table) == true ? effects : nil }
    }
    /// `effects`, when this access's deletes and updates may set an action off.
    private var watched: ActionEffects?

    init(db: Database, table: TrackedTable, catchesWrittenRows: Bool = false) {
        self.db = db
        self.table = table
        self.catchesWrittenRows = catchesWrittenRows
        quotedTable = table.name.quotedIdentifier
        keyMatch = table.keyColumns.map { "\($0.quotedIdentifier) = ?" }.joined(separator: " AND ")
        keyColumns = table.keyColumns.map(\.quotedIdentifier).joined(separator: ", ")
        selectSQL =
            "SELECT \(table.columns.map(\.quotedIdentifier).joined(separator: ", ")) FROM \(quotedTable) WHERE \(keyMatch)"
        deleteSQL = "DELETE FROM \(quotedTable) WHERE \(keyMatch)"
    }

    /// Every column's value, by column index, or nil when the row is absent.
    func values(key: [SQLValue]) throws -> [SQLValue]? {
        let statement = try RawStatement.reusing(&select, db) { selectSQL }
        try statement.bind(key)
        guard try statement.step() else { return nil }
        return (0..<Int32(table.columns.count)).map { statement.value($0) }
    }

    /// The hash of the row with `key` (Protocol/exchange.md §8.1), or nil when it is absent.
    func hash(key: [SQLValue]) throws -> Int64? {
        let statement = try RawStatement.reusing(&select, db) { selectSQL }
        try statement.bind(key)
        defer { statement.reset() }
        return try statement.step() ? hasher().hash(statement) : nil
    }

    private func hasher() throws -> RowHasher {
        if let madeHasher { return madeHasher }
        let made = try RowHasher(table: table, db)
        madeHasher = made
        return made
    }

    /// Writes columns (index, value) of the row with `key`: sets them when the row is present,
    /// or inserts it with the key and those columns. One statement, with no read before it.
    /// `OR ABORT`, here and in `update`, overrides a constraint declared `ON CONFLICT REPLACE`:
    /// a merge must never delete another row unrecorded, and a refused write is settled by the
    /// conflict rules (Protocol/merge.md §5.1). `isNew`: the merge holds nothing of the row, so
    /// this inserts it (no foreign-key action follows an insert).
    func write(key: [SQLValue], columns: [(Int, SQLValue)], isNew: Bool = false) throws {
        let ordered = columns.sorted { $0.0 < $1.0 }
        let skipsUnchanged = try hasher().hasOtherTriggers
        let statement = try RawStatement.reusing(&upserts[ordered.map(\.0)], db) {
            let names = (table.keyIndexes + ordered.map(\.0)).map { table.columns[$0].quotedIdentifier }
            let sets = ordered.map {
                let name = table.columns[$0.0].quotedIdentifier
                return "\(name) = excluded.\(name)"
            }
            let changing = ordered.map {
                let name = table.columns[$0.0].quotedIdentifier
                return differs(name, "excluded.\(name)")
            }
            return "INSERT OR ABORT INTO \(quotedTable)(\(names.joined(separator: ", "))) "
                + "VALUES (\(names.map { _ in "?" }.joined(separator: ", "))) "
                + "ON CONFLICT(\(keyColumns)) DO "
                + (sets.isEmpty ? "NOTHING" : "UPDATE SET \(sets.joined(separator: ", "))")
                + (skipsUnchanged && !sets.isEmpty ? " WHERE \(changing.joined(separator: " OR "))" : "")
        }
        try statement.bind(key)
        try statement.bind(ordered.lazy.map { $0.1 }, from: Int32(key.count) + 1)
        try executeCatchingRow(statement, key: key)
        touched?.note(table, key: key, existing: !isNew)
        // A merge upserts a row it starts a life of: the row is the merge's.
        effects?.noteMerged(table, key: key, columns: nil)
    }

    /// Runs `statement`, which writes at most the row with `key`, catching the row it writes
    /// where it can.
    private func executeCatchingRow(_ statement: RawStatement, key: [SQLValue]) throws {
        caught = nil
        guard let catcher = try rowCatcher() else {
            guard let watched else { return try statement.execute() }
            return try watched.watching { try statement.execute() }
        }
        catcher.effects = watched
        if let hash = try catcher.catching({ try statement.execute() }) { caught = (key, hash) }
    }

    /// The catcher of written rows, where one can be used: on a connection Tidemark opened, for a
    /// table that no other trigger writes to as a row is written.
    private func rowCatcher() throws -> PreUpdateRow? {
        if let catcher { return catcher }
        let hasher = try hasher()
        let made =
            catchesWrittenRows && !hasher.hasOtherTriggers
            ? PreUpdateRow(db, table: table.name, columnCount: table.columns.count) { hasher.hash($0) } : nil
        catcher = .some(made)
        return made
    }

    /// Sets columns (index, value) of the row with `key`; returns false when the row is absent.
    func update(key: [SQLValue], columns: [(Int, SQLValue)]) throws -> Bool {
        let ordered = columns.sorted { $0.0 < $1.0 }
        let skipsUnchanged = try hasher().hasOtherTriggers
        let statement = try RawStatement.reusing(&updates[ordered.map(\.0)], db) {
            let sets = ordered.enumerated().map { "\(table.columns[$1.0].quotedIdentifier) = ?\($0 + 1)" }
            let changing = ordered.enumerated().map { differs(table.columns[$1.0].quotedIdentifier, "?\($0 + 1)") }
            return "UPDATE OR ABORT \(quotedTable) SET \(sets.joined(separator: ", ")) WHERE \(keyMatch)"
                + (skipsUnchanged ? " AND (\(changing.joined(separator: " OR ")))" : "")
        }
        try statement.bind(ordered.lazy.map { $0.1 })
        try statement.bind(key, from: Int32(ordered.count) + 1)
        try executeCatchingRow(statement, key: key)
        guard try db.changesCount > 0 || skipsUnchanged && values(key: key) != nil else { return false }
        touched?.note(table, key: key, existing: true)
        effects?.noteMerged(table, key: key, columns: ordered.map(\.0))
        return true
    }

    /// SQL that is true when `column` does not hold `value` as it is: another value, or the same
    /// number or text of another type or in another letter case. On a table with the app's
    /// triggers, a merge writes only a row it changes: SQLite fires an `UPDATE` trigger for a write
    /// of the value a row holds, and a trigger that wrote the row where it was written (a counter,
    /// a column kept normalized) did so once there, and its write is merged after the one that
    /// fired it.
    private func differs(_ column: String, _ value: String) -> String {
        "(\(column) IS NOT \(value) COLLATE BINARY OR typeof(\(column)) <> typeof(\(value)))"
    }

    /// The hash of the row with `key` just after a write of `columns` (index, value), or nil when
    /// it is absent.
    func hash(key: [SQLValue], written columns: [(Int, SQLValue)]) throws -> Int64? {
        if let caught, caught.key == key {
            self.caught = nil
            return caught.hash
        }
        guard columns.count + key.count == table.columns.count else { return try hash(key: key) }
        var values: [SQLValue?] = []
        swap(&values, &written)
        defer { swap(&values, &written) }
        values.removeAll(keepingCapacity: true)
        values.append(contentsOf: repeatElement(nil, count: table.columns.count))
        for (i, v) in zip(table.keyIndexes, key) { values[i] = v }
        for (i, v) in columns { values[i] = v }
        return try hash(key: key, holding: values)
    }

    /// The row a write left, reused from write to write.
    private var written: [SQLValue?] = []

    /// The hash of the row with `key`, which a write just left holding `values` (by column index,
    /// nil where the write did not set the column), or nil when it is absent. Computed from the
    /// values when they make the whole row and SQLite stores each as given
    /// (`RowHasher.hash(writing:)`), as for most inserts; read otherwise.
    func hash(key: [SQLValue], holding values: [SQLValue?]) throws -> Int64? {
        if let hash = try hash(writing: values) { return hash }
        return try hash(key: key)
    }

    /// The hash of the row a captured insert left, from the history row `captured` holds, where
    /// column `i` lies at statement column `columns[i]` (`RowHasher.hash(captured:columns:)`); nil
    /// when it must be read.
    func hash(captured: RawStatement, columns: [Int32]) throws -> Int64? {
        try hasher().hash(captured: captured, columns: columns)
    }

    /// The hash of the row a write of `values` (by column index) leaves, when they make the whole
    /// row and SQLite stores each as given (`RowHasher.hash(writing:)`); nil when it must be read.
    func hash(writing values: [SQLValue?]) throws -> Int64? {
        try hasher().hash(writing: values)
    }

    /// Inserts `count` rows, each given whole by `values` (every column, in column order), in one
    /// statement; returns false, having changed nothing, when a constraint refuses one of them (a
    /// row with its key is present, say).
    func insertNew(_ values: [SQLValue], count: Int) throws -> Bool {
        if newRowInsert == nil {
            newRowInsert = MultiRowInsert(
                db, into: quotedTable, columns: table.columns.map(\.quotedIdentifier))
        }
        guard try newRowInsert!.insertUnlessRefused(values, count: count) else { return false }
        touched?.note(table, rows: values, count: count)
        if let effects, effects.changedAny {
            let width = table.columns.count
            for row in 0..<count {
                effects.noteMerged(table, key: table.keyIndexes.map { values[row * width + $0] }, columns: nil)
            }
        }
        return true
    }

    private var newRowInsert: MultiRowInsert?

    /// Statements by the column indexes they write, in order.
    private var upserts: [[Int]: RawStatement] = [:]
    private var updates: [[Int]: RawStatement] = [:]

    /// Deletes the row with `key`, if present.
    func delete(key: [SQLValue]) throws {
        let statement = try RawStatement.reusing(&deleteStatement, db) { deleteSQL }
        try statement.bind(key)
        if let watched { try watched.watching { try statement.execute() } } else { try statement.execute() }
        touched?.note(table, key: key, existing: true)
        effects?.noteMerged(table, key: key, columns: nil)
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension RowAccess: Sendable {}
