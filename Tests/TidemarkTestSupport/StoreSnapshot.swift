import Foundation
import GRDB
import Tidemark

/// The rows of a store file, read through a separate read-only connection so that taking a
/// snapshot never seals, captures or otherwise changes anything.
///
/// `trackedTables(of:)` holds the tracked user tables, each ordered by its primary key: two replicas
/// have converged when these snapshots are equal. `everything(of:)` also holds the schema and every
/// bookkeeping table (`tidemark_transactions`, `tidemark_changes`, …): a refused import must leave
/// it exactly as it was.
public struct StoreSnapshot: Sendable, Equatable, CustomStringConvertible {
    /// One table's rows.
    public struct Table: Sendable, Equatable {
        /// The table name.
        public var name: String
        /// Its columns, in table order.
        public var columns: [String]
        /// Indexes into `columns` of the columns that identify a row: the primary key for tracked
        /// tables, every column otherwise.
        public var keyIndexes: [Int]
        /// Every row, ordered by `keyIndexes`, with each value's storage class kept.
        public var rows: [[SQLValue]]
        /// Each column's hash default (Protocol/exchange.md §8.1), nil for a column without one;
        /// empty for tables that are not tracked.
        public var hashDefaults: [SQLValue?] = []

        /// A row's identity.
        public func key(of row: [SQLValue]) -> [SQLValue] { keyIndexes.map { row[$0] } }
    }

    /// The tables, by name.
    public var tables: [Table]

    /// The table named `name`, if the snapshot has it.
    public subscript(name: String) -> Table? { tables.first { $0.name == name } }

    /// The number of rows across all tables.
    public var rowCount: Int { tables.map(\.rows.count).reduce(0, +) }

    /// The tracked user tables of the store at `path` (names and keys from `tidemark_tables`).
    public static func trackedTables(of path: String) throws -> StoreSnapshot {
        try read(path, trackedTables)
    }

    /// Everything in the store at `path`: `sqlite_master` (without page numbers) and every table,
    /// user and bookkeeping, each ordered by all its columns.
    public static func everything(of path: String) throws -> StoreSnapshot {
        try read(path, everything)
    }

    /// Keeps one read-only connection open, for tests that take many snapshots of one store.
    public final class Reader: Sendable {
        private let queue: DatabaseQueue

        /// Opens the store at `path` read-only.
        public init(_ path: String) throws { queue = try StoreSnapshot.open(path) }

        /// The tracked tables now.
        public func trackedTables() throws -> StoreSnapshot {
            StoreSnapshot(tables: try queue.read(StoreSnapshot.trackedTables))
        }
        /// Everything now.
        public func everything() throws -> StoreSnapshot {
            StoreSnapshot(tables: try queue.read(StoreSnapshot.everything))
        }
    }

    private static func trackedTables(_ db: Database) throws -> [Table] {
        // The registrations of tracked tables; their columns and key as SQLite reports them.
        let untracked =
            try db.columns(in: "tidemark_tables").contains { $0.name == "untracked" } ? "WHERE untracked IS NULL" : ""
        return try String.fetchAll(db, sql: "SELECT name FROM tidemark_tables \(untracked) ORDER BY name").map { name in
            let info = try Row.fetchAll(
                db, sql: "SELECT name, pk, type, dflt_value FROM pragma_table_xinfo(?) WHERE hidden = 0",
                arguments: [name])
            let columns = info.map { $0[0] as String }
            let keys = info.indices.filter { (info[$0][1] as Int) > 0 }.sorted {
                (info[$0][1] as Int) < (info[$1][1] as Int)
            }
            var table = try table(name, columns: columns, keyIndexes: keys, in: db)
            table.hashDefaults = try info.map { try hashDefault(declaredType: $0[2], default: $0[3], db) }
            return table
        }
    }

    /// A column's hash default, by the words of exchange.md §8.1 rather than the store's code.
    private static func hashDefault(declaredType: String, default text: String?, _ db: Database) throws -> SQLValue? {
        guard let text, RowDigest.isLiteralDefault(text),
            let value = (try? DatabaseValue.fetchOne(db, sql: "SELECT \(text)")).flatMap({ $0 }).map(SQLValue.init)
        else { return nil }
        // The affinity, by SQLite's rules for the declared type (datatype3.html §3.1).
        let type = declaredType.uppercased()
        let affinity =
            type.contains("INT")
            ? "INTEGER"
            : ["CHAR", "CLOB", "TEXT"].contains(where: type.contains)
                ? "TEXT"
                : type.contains("BLOB") || type.isEmpty
                    ? "BLOB" : ["REAL", "FLOA", "DOUB"].contains(where: type.contains) ? "REAL" : "NUMERIC"
        switch (value, affinity) {
        case (.null, _): return nil
        case (.real(let d), _) where d.isInfinite: return nil
        case (.real(let d), "BLOB"): return d.rounded() == d ? nil : value
        case (_, "BLOB"), (.blob, _), (.text, "TEXT"): return value
        case (.integer(let v), "REAL"): return .real(Double(v))
        case (.integer, "INTEGER"), (.integer, "NUMERIC"): return value
        case (.real(let d), "REAL"): return d == 0 && d.sign == .minus ? nil : value
        case (.real(let d), _) where affinity != "TEXT": return d.rounded() == d ? nil : value
        case (.text(let s), _) where affinity != "TEXT":
            let first = s.unicodeScalars.first { !" \t\n\u{0B}\u{0C}\r".unicodeScalars.contains($0) }
            return first.map { "0123456789+-.".unicodeScalars.contains($0) } == true ? nil : value
        default: return nil
        }
    }

    private static func everything(_ db: Database) throws -> [Table] {
        let schema = Table(
            name: "sqlite_master", columns: ["type", "name", "tbl_name", "sql"], keyIndexes: [0, 1],
            rows: try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
                .map { Array($0.databaseValues.map(SQLValue.init)) })
        let names = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return try [schema]
            + names.map { name in
                let columns = try db.columns(in: name).map(\.name)
                return try table(name, columns: columns, keyIndexes: Array(columns.indices), in: db)
            }
    }

    /// The rows of table `name`. Text is read as its bytes, every one: GRDB's values hold text up to
    /// its first NUL character, and two stores that differ past one must not look equal.
    private static func table(_ name: String, columns: [String], keyIndexes: [Int], in db: Database) throws -> Table {
        let list = columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")
        let order = (keyIndexes.isEmpty ? Array(columns.indices) : keyIndexes).map { "\($0 + 1)" }.joined(
            separator: ", ")
        var rows: [[SQLValue]] = []
        let cursor = try Row.fetchCursor(
            db, sql: "SELECT \(list) FROM \(name.quotedDatabaseIdentifier) ORDER BY \(order)")
        while let row = try cursor.next() {
            rows.append(
                try row.databaseValues.enumerated().map { i, value in
                    guard case .string = value.storage else { return SQLValue(value) }
                    return try row.withUnsafeData(atIndex: i) { .text(String(decoding: $0 ?? Data(), as: UTF8.self)) }
                })
        }
        return Table(name: name, columns: columns, keyIndexes: keyIndexes, rows: rows)
    }

    private static func read(_ path: String, _ tables: (Database) throws -> [Table]) throws -> StoreSnapshot {
        let queue = try open(path)
        defer { try? queue.close() }
        return StoreSnapshot(tables: try queue.read(tables))
    }

    private static func open(_ path: String) throws -> DatabaseQueue {
        guard FileManager.default.fileExists(atPath: path) else {
            throw SnapshotError(description: "no file at \(path)")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(10)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// A snapshot that could not be taken.
    public struct SnapshotError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The same snapshot without the rows `drop` selects (e.g. a replica's own rows, before
    /// comparing it with a replica that has not received them yet).
    public func removing(_ drop: (_ table: String, _ row: [SQLValue]) -> Bool) -> StoreSnapshot {
        StoreSnapshot(
            tables: tables.map { table in
                var copy = table
                copy.rows = table.rows.filter { !drop(table.name, $0) }
                return copy
            })
    }

    // MARK: - Comparing

    /// What differs between `self` (labelled `mine`) and `other` (labelled `theirs`), row by row by
    /// key; empty when the snapshots are equal. At most `limit` lines.
    public func differences(from other: StoreSnapshot, mine: String = "left", theirs: String = "right", limit: Int = 30)
        -> [String]
    {
        var lines: [String] = []
        let names = Set(tables.map(\.name)).union(other.tables.map(\.name)).sorted()
        for name in names {
            guard let left = self[name] else {
                lines.append("table \(name) only in \(theirs)")
                continue
            }
            guard let right = other[name] else {
                lines.append("table \(name) only in \(mine)")
                continue
            }
            if left.columns != right.columns {
                lines.append(
                    "table \(name): columns (\(left.columns.joined(separator: ", "))) in \(mine), (\(right.columns.joined(separator: ", "))) in \(theirs)"
                )
                continue
            }
            var rightRows: [[SQLValue]: [[SQLValue]]] = [:]
            for row in right.rows { rightRows[right.key(of: row), default: []].append(row) }
            for row in left.rows {
                let key = left.key(of: row)
                guard var matches = rightRows[key], !matches.isEmpty else {
                    lines.append("\(name) \(render(key)): only in \(mine): \(render(row))")
                    continue
                }
                let match = matches.removeFirst()
                rightRows[key] = matches
                if match != row {
                    let columns = left.columns.indices.filter { row[$0] != match[$0] }
                    let detail = columns.map { "\(left.columns[$0]) \(row[$0]) vs \(match[$0])" }.joined(
                        separator: ", ")
                    lines.append("\(name) \(render(key)): \(detail) (\(mine) vs \(theirs))")
                }
            }
            for row in right.rows where rightRows[right.key(of: row)]?.contains(row) == true {
                lines.append("\(name) \(render(right.key(of: row))): only in \(theirs): \(render(row))")
            }
            if left.rows.map(left.key) != right.rows.map(right.key), lines.isEmpty {
                lines.append("table \(name): same rows in a different order")
            }
        }
        return Array(lines.prefix(limit))
    }

    private func render(_ values: [SQLValue]) -> String {
        "[" + values.map(\.description).joined(separator: ", ") + "]"
    }

    public var description: String {
        tables.map { table in
            "\(table.name)(\(table.columns.joined(separator: ", "))): \(table.rows.count) rows"
                + table.rows.prefix(50).map { "\n  " + render($0) }.joined()
        }.joined(separator: "\n")
    }

    /// Equal when every table has the same columns and the same rows (storage classes and bits
    /// compared exactly, as `SQLValue` does).
    public static func == (lhs: StoreSnapshot, rhs: StoreSnapshot) -> Bool {
        lhs.tables.count == rhs.tables.count
            && zip(lhs.tables, rhs.tables).allSatisfy {
                $0.name == $1.name && $0.columns == $1.columns && $0.rows == $1.rows
            }
    }
}
