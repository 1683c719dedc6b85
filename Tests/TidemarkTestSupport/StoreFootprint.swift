import Foundation
import GRDB
import Tidemark

/// What a store takes on disk, against an untracked SQLite file holding the same rows.
///
/// Every size is of a `VACUUM INTO` copy, so free pages do not count and the store itself is not
/// touched. The untracked file has the store's user tables and their indexes (same DDL, rows
/// copied); "with tombstones" adds the store's row-metadata tables (same DDL) holding only the rows
/// whose generation is even, the deleted identities a store must remember (Protocol/merge.md §2).
public struct StoreFootprint: Sendable, CustomStringConvertible {
    /// The store, vacuumed.
    public var storeBytes: Int
    /// The untracked copy of its user rows, vacuumed.
    public var untrackedBytes: Int
    /// The untracked copy plus the tombstones' row metadata, vacuumed.
    public var untrackedWithTombstonesBytes: Int
    /// Live rows in the tracked user tables.
    public var rows: Int
    /// Tombstones (row-metadata rows with an even generation) across the user tables.
    public var tombstones: Int
    /// The store's bytes per table or index (SQLite's `dbstat`), largest first; empty when SQLite
    /// was built without it.
    public var breakdown: [(name: String, bytes: Int)]

    /// What the tombstones add to the untracked file.
    public var tombstoneBytes: Int { untrackedWithTombstonesBytes - untrackedBytes }
    /// Store size over the untracked size with tombstones: 1.0 means no overhead.
    public var ratio: Double { Double(storeBytes) / Double(untrackedWithTombstonesBytes) }

    public var description: String {
        let parts = breakdown.map { "\($0.name) \($0.bytes)" }.joined(separator: ", ")
        return "store \(storeBytes) bytes; untracked \(untrackedBytes) bytes + tombstones \(tombstoneBytes) bytes = "
            + "\(untrackedWithTombstonesBytes) bytes (\(rows) rows, \(tombstones) tombstones); ratio "
            + String(format: "%.3f", ratio) + (parts.isEmpty ? "" : "; store by object: \(parts)")
    }

    /// Measures the store at `path`, writing scratch files into `scratch`.
    public static func measure(_ path: String, scratch: TemporaryDirectory) throws -> StoreFootprint {
        let label = UUID().uuidString.prefix(8)
        let vacuumed = scratch.file("footprint-\(label)-store.db")
        let plain = scratch.file("footprint-\(label)-untracked.db")
        let withTombstones = scratch.file("footprint-\(label)-tombstones.db")

        let source = try DatabaseQueue(path: path)
        defer { try? source.close() }
        try source.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [vacuumed]) }
        let shape = try source.read { db in try Shape(db) }

        let rows = try copy(shape, from: path, into: plain, tombstones: false)
        let tombstones = try copy(shape, from: path, into: withTombstones, tombstones: true)
        let breakdown: [(name: String, bytes: Int)] =
            (try? DatabaseQueue(path: vacuumed).read { db in
                try Row.fetchAll(db, sql: "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC, 1").map {
                    (name: $0[0] as String, bytes: $0[1] as Int)
                }
            }) ?? []
        return StoreFootprint(
            storeBytes: try size(vacuumed), untrackedBytes: try size(plain + ".vacuumed"),
            untrackedWithTombstonesBytes: try size(withTombstones + ".vacuumed"), rows: rows.rows,
            tombstones: tombstones.tombstones,
            breakdown: breakdown)
    }

    /// The DDL of the user tables, their indexes and their row-metadata tables.
    struct Shape {
        var tables: [String] = []
        var statements: [String] = []
        var metadataTables: [String] = []
        var metadataStatements: [String] = []

        init(_ db: Database) throws {
            for row in try Row.fetchAll(db, sql: "SELECT id, name FROM tidemark_tables ORDER BY id") {
                let id: Int64 = row[0]
                let name: String = row[1]
                guard !name.hasPrefix("tidemark_") else { continue }
                tables.append(name)
                statements += try String.fetchAll(
                    db,
                    sql:
                        "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('table', 'index') AND sql IS NOT NULL ORDER BY type DESC",
                    arguments: [name])
                let metadata = "tidemark_rows_\(id)"
                metadataTables.append(metadata)
                metadataStatements += try String.fetchAll(
                    db, sql: "SELECT sql FROM sqlite_master WHERE name = ? AND sql IS NOT NULL", arguments: [metadata])
            }
        }
    }

    private static func copy(_ shape: Shape, from path: String, into target: String, tombstones: Bool) throws -> (
        rows: Int, tombstones: Int
    ) {
        let queue = try DatabaseQueue(path: target)
        defer { try? queue.close() }
        var counts = (rows: 0, tombstones: 0)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS src", arguments: [path])
            for statement in shape.statements { try db.execute(sql: statement) }
            for table in shape.tables {
                try db.execute(
                    sql:
                        "INSERT INTO main.\(table.quotedDatabaseIdentifier) SELECT * FROM src.\(table.quotedDatabaseIdentifier)"
                )
                counts.rows += db.changesCount
            }
            if tombstones {
                for statement in shape.metadataStatements { try db.execute(sql: statement) }
                for table in shape.metadataTables {
                    try db.execute(sql: "INSERT INTO main.\(table) SELECT * FROM src.\(table) WHERE gen % 2 = 0")
                    counts.tombstones += db.changesCount
                }
            }
            try db.execute(sql: "DETACH DATABASE src")
            try db.execute(sql: "VACUUM INTO ?", arguments: [target + ".vacuumed"])
        }
        return counts
    }

    private static func size(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
    }
}
