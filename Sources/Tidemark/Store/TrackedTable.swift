import GRDB

/// A user table whose writes are captured, as registered in `tidemark_tables`.
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

    /// How many columns a row-metadata row's shared clock covers when its `w` is NULL: the column
    /// count before the first migration that added columns; nil while none has (it covers all).
    var sharedClockWidth: Int?

    /// Whether this is Tidemark's own replicated table (membership), not the user's.
    var isInternal: Bool { name.hasPrefix(Bookkeeping.prefix) }

    /// The primary-key column names, in key order.
    public var keyColumns: [String] { keyIndexes.map { columns[$0] } }
    /// The preserved column names.
    public var preservedColumns: [String] { preservedIndexes.map { columns[$0] } }
    /// The index of a column by name.
    public func index(of column: String) -> Int? { columns.firstIndex(of: column) }
}

extension TrackedTable {
    /// Loads every registration.
    static func fetchAll(_ db: Database) throws -> [TrackedTable] {
        let width = try Bookkeeping.hasSharedClockWidth(db) ? "shared_width" : "NULL"
        return try Row.fetchAll(db, sql: "SELECT id, name, columns, key_columns, preserved, \(width) FROM tidemark_tables ORDER BY id").map {
            row in
            func indexes(_ text: String) -> [Int] { text.split(separator: ",").compactMap { Int($0) } }
            return TrackedTable(
                id: row[0], name: row[1], columns: (row[2] as String).split(separator: "\n").map(String.init),
                keyIndexes: indexes(row[3]), preservedIndexes: indexes(row[4]), sharedClockWidth: row[5])
        }
    }

    /// A store's registrations as last read, shared by every operation of one `Store`, and read
    /// again when SQLite's schema version shows the schema changed.
    final class Registrations: Sendable {
        private let state: Locked<(tables: [TrackedTable], schemaVersion: Int?)>

        init(_ tables: [TrackedTable]) { state = Locked((tables, nil)) }

        var tables: [TrackedTable] { state.withLock { $0.tables } }

        /// Reads the registrations again if the schema changed since they were read.
        func refresh(_ db: Database) throws {
            let version = try Int.fetchOne(db, sql: "PRAGMA schema_version")
            guard state.withLock({ $0.schemaVersion != version }) else { return }
            let tables = try TrackedTable.fetchAll(db)
            state.withLock { $0 = (tables, version) }
        }
    }

    /// Rewrites this registration's columns, preserved columns and shared-clock width.
    func update(_ db: Database) throws {
        try db.execute(
            sql: "UPDATE tidemark_tables SET columns = ?, preserved = ?, shared_width = ? WHERE id = ?",
            arguments: [columns.joined(separator: "\n"), preservedIndexes.map(String.init).joined(separator: ","), sharedClockWidth, id])
    }

    /// Writes this registration.
    func insert(_ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO tidemark_tables(id, name, columns, key_columns, preserved) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                id, name, columns.joined(separator: "\n"), keyIndexes.map(String.init).joined(separator: ","),
                preservedIndexes.map(String.init).joined(separator: ","),
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
        guard try db.tableExists(table) else { throw StoreError.unknownTable(table) }
        let info = try Row.fetchAll(db, sql: "SELECT name, type, pk, hidden FROM pragma_table_xinfo(?)", arguments: [table])
        var columns: [String] = []
        var types: [String] = []
        var keyed: [(Int, String)] = []
        for row in info where (row["hidden"] as Int) == 0 {
            let name: String = row["name"]
            columns.append(name)
            types.append(row["type"])
            let pk: Int = row["pk"]
            if pk > 0 { keyed.append((pk, name)) }
        }
        let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [table]) ?? ""
        let withoutRowID = sql.uppercased().replacingOccurrences(of: " ", with: "").hasSuffix("WITHOUTROWID")
            || sql.range(of: "WITHOUT\\s+ROWID", options: [.regularExpression, .caseInsensitive]) != nil
        return Shape(columns: columns, declaredTypes: types, keyColumns: keyed.sorted { $0.0 < $1.0 }.map(\.1), withoutRowID: withoutRowID)
    }

    /// Checks that a table can be tracked and describes it; throws `StoreError.untrackableTable`
    /// with the reason and a hint otherwise.
    static func describe(_ table: String, id: Int64, preserving: [String], in db: Database, allowReserved: Bool = false) throws -> TrackedTable {
        if !allowReserved && (table.lowercased().hasPrefix(Bookkeeping.prefix) || table.lowercased().hasPrefix("sqlite_")) {
            throw StoreError.untrackableTable(table, reason: "the name is reserved", hint: "rename the table")
        }
        let shape = try shape(of: table, in: db)
        let kind = try String.fetchOne(db, sql: "SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [table])
        if kind != "table" {
            throw StoreError.untrackableTable(table, reason: "it is a \(kind ?? "special") table, not an ordinary one", hint: "track an ordinary table")
        }
        guard !shape.keyColumns.isEmpty else {
            throw StoreError.untrackableTable(
                table, reason: "it has no PRIMARY KEY, so its rows have no identity shared by every replica",
                hint: "declare a primary key, e.g. `id TEXT PRIMARY KEY` holding a UUID")
        }
        if shape.keyColumns.count == 1, !shape.withoutRowID,
            let i = shape.columns.firstIndex(of: shape.keyColumns[0]), shape.declaredTypes[i].uppercased() == "INTEGER"
        {
            throw StoreError.untrackableTable(
                table,
                reason: "its key '\(shape.keyColumns[0])' is an INTEGER PRIMARY KEY, which SQLite assigns itself (two replicas would both create row 1)",
                hint: "use a key the application chooses, e.g. `id TEXT PRIMARY KEY` holding a UUID")
        }
        guard shape.columns.count <= Bookkeeping.maxTrackedColumns else {
            throw StoreError.untrackableTable(
                table, reason: "it has \(shape.columns.count) columns; at most \(Bookkeeping.maxTrackedColumns) can be tracked",
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
        guard try db.tableExists(name) else { return false }
        let shape = try Self.shape(of: name, in: db)
        return shape.columns == columns && shape.keyColumns == keyColumns
    }

    /// Throws `StoreError.trackedTableChanged` if the table no longer has the registered columns.
    func checkShape(in db: Database) throws {
        guard try db.tableExists(name) else { throw StoreError.trackedTableChanged(name, now: "the table was dropped") }
        let shape = try Self.shape(of: name, in: db)
        if shape.columns != columns || shape.keyColumns != keyColumns {
            throw StoreError.trackedTableChanged(
                name, now: "columns were (\(columns.joined(separator: ", "))) and are now (\(shape.columns.joined(separator: ", ")))")
        }
    }
}

import Foundation
