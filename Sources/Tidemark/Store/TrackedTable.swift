import Foundation
import GRDB

/// A user table whose writes are captured, as registered in `tidemark_tables`.
///
/// Each column has a storage **slot**, its number in history (`tidemark_changes.c<slot>`) and in
/// row metadata: slots are given in order as columns are tracked and never reused, so a renamed
/// column keeps its slot and a dropped one leaves its slot behind for the history written before.
public struct TrackedTable: Sendable, Hashable {
    /// The registration number used in `tidemark_changes.table_id`.
    public var id: Int64
    /// The table name.
    public var name: String
    /// Every stored column, in table order (generated columns are not stored and not tracked).
    public var columns: [String]
    /// Indexes into `columns` of the primary-key columns, in key order.
    public var keyIndexes: [Int]
    /// Indexes into `columns` of the columns whose last values a delete's tombstone keeps, besides
    /// the key (Core Data's "Preserve After Deletion").
    public var preservedIndexes: [Int]

    /// The storage slot of each of `columns`.
    var slots: [Int]
    /// Columns a migration dropped: their slots still hold the history written before.
    var retired: [Retired] = []
    /// The position of the schema version that stopped tracking the table; nil while tracked.
    var untrackedAt: Int?

    /// How many slots a row-metadata row's shared clock covers when its `w` is NULL: the slot
    /// count before the first migration that added columns; nil while none has (it covers all).
    var sharedClockWidth: Int?

    /// A dropped column.
    struct Retired: Sendable, Hashable {
        var slot: Int
        var name: String
        /// The position of the schema version that dropped it.
        var droppedAt: Int
    }

    init(id: Int64, name: String, columns: [String], keyIndexes: [Int], preservedIndexes: [Int], slots: [Int]? = nil) {
        self.id = id
        self.name = name
        self.columns = columns
        self.keyIndexes = keyIndexes
        self.preservedIndexes = preservedIndexes
        self.slots = slots ?? Array(columns.indices)
    }

    /// Whether this is Tidemark's own replicated table (membership), not the user's.
    var isInternal: Bool { name.hasPrefix(Bookkeeping.prefix) }

    /// The primary-key column names, in key order.
    public var keyColumns: [String] { keyIndexes.map { columns[$0] } }
    /// The preserved column names.
    public var preservedColumns: [String] { preservedIndexes.map { columns[$0] } }
    /// The index of a column by name.
    public func index(of column: String) -> Int? { columns.firstIndex(of: column) }

    /// The number of slots given so far: the next column tracked gets this one.
    var slotCount: Int { max(slots.max() ?? -1, retired.map(\.slot).max() ?? -1) + 1 }
    /// Column names by slot, live and retired; nil for no column.
    var namesBySlot: [String?] {
        var names = [String?](repeating: nil, count: slotCount)
        for column in retired { names[column.slot] = column.name }
        for (i, slot) in slots.enumerated() { names[slot] = columns[i] }
        return names
    }
}

extension TrackedTable {
    /// Loads every registration, untracked ones included (their history is still relayed).
    static func fetchAll(_ db: Database, includingUntracked: Bool = false) throws -> [TrackedTable] {
        let width = try Bookkeeping.hasSharedClockWidth(db) ? "shared_width" : "NULL"
        let slotted = try Bookkeeping.hasSlots(db)
        let extra = slotted ? "layout, retired, untracked" : "NULL, '', NULL"
        let tables = try Row.fetchAll(
            db,
            sql: "SELECT id, name, columns, key_columns, preserved, \(width), \(extra) FROM tidemark_tables ORDER BY id"
        ).map { row in
            func numbers(_ text: String) -> [Int] { text.split(separator: ",").compactMap { Int($0) } }
            let names = (row[2] as String).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let retired = (row[7] as String? ?? "").split(separator: ",").compactMap { entry -> Retired? in
                let parts = entry.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 2, parts[0] < names.count else { return nil }
                return Retired(slot: parts[0], name: names[parts[0]], droppedAt: parts[1])
            }
            let retiredSlots = Set(retired.map(\.slot))
            let slots = (row[6] as String?).map(numbers) ?? names.indices.filter { !retiredSlots.contains($0) }
            func indexes(_ text: String) -> [Int] { numbers(text).compactMap { slots.firstIndex(of: $0) } }
            var table = TrackedTable(
                id: row[0], name: row[1], columns: slots.map { names[$0] }, keyIndexes: indexes(row[3]),
                preservedIndexes: indexes(row[4]), slots: slots)
            table.sharedClockWidth = row[5]
            table.retired = retired
            table.untrackedAt = row[8]
            return table
        }
        return includingUntracked ? tables : tables.filter { $0.untrackedAt == nil }
    }

    /// A store's registrations as last read, shared by every operation of one `Store`, and read
    /// again when SQLite's schema version shows the schema changed.
    final class Registrations: Sendable {
        private let state: Locked<(tables: [TrackedTable], schemaVersion: Int?)>

        init(_ tables: [TrackedTable]) { state = Locked((tables, nil)) }

        /// The tracked tables.
        var tables: [TrackedTable] { state.withLock { $0.tables.filter { $0.untrackedAt == nil } } }
        /// Every registration, untracked tables included.
        var all: [TrackedTable] { state.withLock { $0.tables } }

        /// Reads the registrations again if the schema changed since they were read.
        func refresh(_ db: Database) throws {
            let version = Int(try db.schemaVersion())
            guard state.withLock({ $0.schemaVersion != version }) else { return }
            let tables = try TrackedTable.fetchAll(db, includingUntracked: true)
            state.withLock { $0 = (tables, version) }
        }

        /// The registrations as they are now, for `restore`.
        var saved: (tables: [TrackedTable], schemaVersion: Int?) { state.withLock { $0 } }

        /// Puts back registrations saved before a schema change whose transaction rolled back,
        /// without reading the database (GRDB refuses statements while it reports a rollback).
        /// Of several changes rolled back together, the first one's registrations stay: they are
        /// the oldest schema version.
        func restore(_ saved: (tables: [TrackedTable], schemaVersion: Int?)) {
            state.withLock { current in
                if let old = saved.schemaVersion, let now = current.schemaVersion, old >= now { return }
                current = saved
            }
        }

        /// Reads the registrations again: they changed without a schema change.
        func reload(_ db: Database) throws {
            let version = Int(try db.schemaVersion())
            let tables = try TrackedTable.fetchAll(db, includingUntracked: true)
            state.withLock { $0 = (tables, version) }
        }
    }

    /// The registration's columns as stored: names by slot, one per line; key and preserved
    /// columns and the table order as slots; retired slots as `slot:position`.
    private var stored: (names: String, keys: String, preserved: String, layout: String, retired: String) {
        let numbers = { (values: [Int]) in values.map(String.init).joined(separator: ",") }
        return (
            namesBySlot.map { $0 ?? "" }.joined(separator: "\n"), numbers(keyIndexes.map { slots[$0] }),
            numbers(preservedIndexes.map { slots[$0] }), numbers(slots),
            retired.map { "\($0.slot):\($0.droppedAt)" }.joined(separator: ",")
        )
    }

    /// Rewrites this registration.
    func update(_ db: Database) throws {
        let stored = stored
        try db.execute(
            sql: """
                UPDATE tidemark_tables SET name = ?, columns = ?, key_columns = ?, preserved = ?, shared_width = ?, layout = ?,
                    retired = ?, untracked = ? WHERE id = ?
                """,
            arguments: [
                name, stored.names, stored.keys, stored.preserved, sharedClockWidth, stored.layout, stored.retired,
                untrackedAt, id,
            ])
    }

    /// Writes this registration.
    func insert(_ db: Database) throws {
        let stored = stored
        try db.execute(
            sql: """
                INSERT INTO tidemark_tables(id, name, columns, key_columns, preserved, shared_width, layout, retired, untracked)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                id, name, stored.names, stored.keys, stored.preserved, sharedClockWidth, stored.layout, stored.retired,
                untrackedAt,
            ])
    }
}

// MARK: - Introspection

extension TrackedTable {
    /// The shape of a user table as SQLite reports it.
    struct Shape: Equatable {
        var columns: [String]
        var declaredTypes: [String]
        /// Key column names in key order; empty when the table has no PRIMARY KEY.
        var keyColumns: [String]
        var withoutRowID: Bool
    }

    /// Reads a table's stored columns and primary key. Throws `StoreError.unknownTable` if absent.
    static func shape(of table: String, in db: Database) throws -> Shape {
        guard let shape = try shapeIfPresent(of: table, in: db) else { throw StoreError.unknownTable(table) }
        return shape
    }

    /// Whether SQLite takes `a` and `b` for the same name: it folds the case of ASCII letters only.
    static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { folded($0) == folded($1) }
    }

    /// `name` as SQLite compares names (`sameName`).
    static func folded(_ name: String) -> String { String(decoding: name.utf8.map(folded), as: UTF8.self) }

    /// A byte of a name as SQLite compares it: an ASCII letter in lower case, anything else as is.
    private static func folded(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }

    /// The name of table `table` as the main schema spells it, which SQLite matches whatever the
    /// case; nil when there is no such table.
    static func spelling(of table: String, in db: Database) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT name FROM pragma_table_list(?) WHERE schema = 'main' AND type <> 'view'",
            arguments: [table])
    }

    /// Reads a table's stored columns and primary key; nil when the main schema has no such table
    /// (a view, say). The name matches as SQLite matches it, whatever its case; SQLite's own table
    /// list says whether it is WITHOUT ROWID.
    static func shapeIfPresent(of table: String, in db: Database) throws -> Shape? {
        guard
            let withoutRowID = try Bool.fetchOne(
                db, sql: "SELECT wr FROM pragma_table_list(?) WHERE schema = 'main' AND type <> 'view'",
                arguments: [table])
        else { return nil }
        let info = try Row.fetchAll(
            db, sql: "SELECT name, type, pk, hidden FROM pragma_table_xinfo(?, 'main')", arguments: [table])
        var columns: [String] = []
        var types: [String] = []
        var keyed: [(Int, String)] = []
        for row in info where (row[3] as Int) == 0 {
            let name: String = row[0]
            columns.append(name)
            types.append(row[1])
            let pk: Int = row[2]
            if pk > 0 { keyed.append((pk, name)) }
        }
        return Shape(
            columns: columns, declaredTypes: types, keyColumns: keyed.sorted { $0.0 < $1.0 }.map(\.1),
            withoutRowID: withoutRowID)
    }

    /// Why the table `table`, of `shape`, cannot be tracked, and what to do; nil when it can be
    /// (but for its number of columns). A migration that leaves a tracked table so is refused too.
    static func refusal(of table: String, _ shape: Shape, in db: Database, allowReserved: Bool = false) throws
        -> (reason: String, hint: String)?
    {
        if !allowReserved
            && (table.lowercased().hasPrefix(Bookkeeping.prefix) || table.lowercased().hasPrefix("sqlite_"))
        {
            return ("the name is reserved", "rename the table")
        }
        if let refusal = try nameRefusal(of: table, columns: shape.columns, in: db) { return refusal }
        let kind = try String.fetchOne(
            db, sql: "SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ? COLLATE NOCASE",
            arguments: [table])
        if kind != "table" {
            return ("it is a \(kind ?? "special") table, not an ordinary one", "track an ordinary table")
        }
        guard !shape.keyColumns.isEmpty else {
            return (
                "it has no PRIMARY KEY, so its rows have no identity shared by every replica",
                "declare a primary key, e.g. `id TEXT PRIMARY KEY` holding a UUID"
            )
        }
        // A rowid alias is the one key SQLite keeps without an index of its own: `id INTEGER
        // PRIMARY KEY`, and not `id INTEGER PRIMARY KEY DESC`, which SQLite keeps as an ordinary key.
        if shape.keyColumns.count == 1, !shape.withoutRowID,
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM pragma_index_list(?) WHERE origin = 'pk'", arguments: [table]) == 0
        {
            return (
                "its key '\(shape.keyColumns[0])' is an INTEGER PRIMARY KEY, which SQLite assigns itself (two replicas would both create row 1)",
                "use a key the application chooses, e.g. `id TEXT PRIMARY KEY` holding a UUID"
            )
        }
        return nil
    }

    /// Refuses, with `StoreError.untrackableTable`, a table about to be tracked whose key would
    /// not keep replicas together: one that compares otherwise than byte for byte, or rows that
    /// have no key. Tables tracked before are not asked again.
    static func checkKeys(of table: TrackedTable, in db: Database) throws {
        let nullable = try CaptureTriggers.nullableKeys(of: table, in: db).sorted().map { table.columns[$0] }
        try checkIntegralRealKeys(of: table, in: db)
        let table = table.name
        // A key that compares otherwise than byte for byte makes keys that differ ('a' and 'A'
        // under NOCASE) one row here and two on a replica that received them in another order.
        let collations = try Row.fetchAll(
            db,
            sql: """
                SELECT name, coll FROM pragma_index_xinfo(
                  (SELECT name FROM pragma_index_list(?) WHERE origin = 'pk')) WHERE key = 1 AND upper(coll) <> 'BINARY'
                """, arguments: [table])
        if let row = collations.first {
            let (column, collation): (String, String) = (row[0], row[1])
            throw StoreError.untrackableTable(
                table,
                reason:
                    "its key '\(column)' compares with COLLATE \(collation), so keys that differ in bytes could be one row on one replica and two on another",
                hint:
                    "declare the key without a collation (BINARY), and keep an index with COLLATE \(collation) for lookups"
            )
        }
        // SQLite lets a rowid table's key be NULL unless declared NOT NULL; the capture triggers
        // refuse such a write from now on (`CaptureTriggers`), and rows already there are refused here.
        if !nullable.isEmpty {
            let isNull = nullable.map { "\($0.quotedIdentifier) IS NULL" }.joined(separator: " OR ")
            if try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(table.quotedIdentifier) WHERE \(isNull))")
                == true
            {
                throw StoreError.untrackableTable(
                    table, reason: "some of its rows have a NULL key, which no replica could tell apart",
                    hint: "give those rows a key, or delete them, then track the table")
            }
        }
    }

    /// Checks that a table can be tracked and describes it; throws `StoreError.untrackableTable`
    /// with the reason and a hint otherwise.
    static func describe(_ name: String, id: Int64, preserving: [String], in db: Database, allowReserved: Bool = false)
        throws -> TrackedTable
    {
        // Registered as the schema spells it (`t` for `--track T`): history, bundles and peers
        // name a table by its exact name.
        let table = try spelling(of: name, in: db) ?? name
        let shape = try shape(of: table, in: db)
        if let (reason, hint) = try refusal(of: table, shape, in: db, allowReserved: allowReserved) {
            throw StoreError.untrackableTable(table, reason: reason, hint: hint)
        }
        let limit = Bookkeeping.maxTrackedColumns(db, keyCount: shape.keyColumns.count)
        guard shape.columns.count <= limit else {
            throw StoreError.untrackableTable(
                table,
                reason:
                    "it has \(shape.columns.count) columns; at most \(limit) can be tracked (history and snapshots need room beside them within SQLite's \(db.columnLimit) columns)",
                hint: "split the table")
        }
        var preserved: [Int] = []
        for column in preserving {
            guard let i = shape.columns.firstIndex(where: { $0.caseInsensitiveCompare(column) == .orderedSame }) else {
                throw StoreError.unknownColumn(table: table, column: column)
            }
            if !preserved.contains(i) { preserved.append(i) }
        }
        let keyIndexes = shape.keyColumns.map { k in shape.columns.firstIndex(of: k)! }
        return TrackedTable(
            id: id, name: table, columns: shape.columns, keyIndexes: keyIndexes,
            preservedIndexes: preserved.filter { !keyIndexes.contains($0) }.sorted())
    }

    /// Whether the table exists with the registered columns and key.
    func hasRegisteredShape(in db: Database) throws -> Bool {
        guard let shape = try Self.shapeIfPresent(of: name, in: db) else { return false }
        return shape.columns == columns && shape.keyColumns == keyColumns
    }

    /// How a table's columns changed, as an error says it: the columns it gained and lost, at most
    /// ten of each by name (a table of a thousand columns made a message of thousands of bytes), or
    /// the new order when it has the same ones.
    static func difference(from old: [String], to new: [String]) -> String {
        let named = { (names: [String]) in
            names.prefix(10).map { "'\($0)'" }.joined(separator: ", ")
                + (names.count > 10 ? " and \(names.count - 10) more" : "")
        }
        let added = new.filter { !old.contains($0) }
        let dropped = old.filter { !new.contains($0) }
        guard !added.isEmpty || !dropped.isEmpty else {
            return
                "its columns were reordered, now (\(new.prefix(10).joined(separator: ", "))\(new.count > 10 ? ", …" : ""))"
        }
        return "it had \(old.count) columns and has \(new.count)"
            + (added.isEmpty ? "" : "; gained \(named(added))") + (dropped.isEmpty ? "" : "; lost \(named(dropped))")
    }

    /// Throws `StoreError.trackedTableChanged` if the table no longer has the registered columns.
    func checkShape(in db: Database) throws {
        guard let shape = try Self.shapeIfPresent(of: name, in: db) else {
            throw StoreError.trackedTableChanged(name, now: "the table was dropped")
        }
        if shape.columns != columns || shape.keyColumns != keyColumns {
            throw StoreError.trackedTableChanged(
                name,
                now: shape.columns == columns
                    ? "its primary key changed from (\(keyColumns.joined(separator: ", "))) to "
                        + "(\(shape.keyColumns.joined(separator: ", ")))"
                    : Self.difference(from: columns, to: shape.columns))
        }
        // The same names, rebuilt so that it can no longer be tracked (its key made a rowid).
        let reserved = name.lowercased().hasPrefix(Bookkeeping.prefix)
        if let (reason, _) = try Self.refusal(of: name, shape, in: db, allowReserved: reserved) {
            throw StoreError.trackedTableChanged(name, now: "it could no longer be tracked: \(reason)")
        }
    }
}
