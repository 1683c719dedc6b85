import GRDB

// MARK: - Repairs

extension CaptureTriggers {
    /// A tracked table whose capture triggers are not what `install` makes.
    struct Repair {
        var table: TrackedTable
        /// The SQL of the table's capture triggers that are there, by name.
        var present: [String: String]
        /// Whether one is missing: another client removed it (or rebuilt the table, which drops
        /// them with it), and that table's writes went unrecorded meanwhile. Otherwise one reads
        /// otherwise, as an earlier build wrote it (or another client replaced it), or an app's
        /// trigger made after them fires first (`outranked`).
        var missing: Bool
        /// Whether an app's trigger on the table was made after one of them (`outranked`): they
        /// are all made again, whatever they read.
        var outranked = false
    }

    /// The tables (lowercased) on which an app's trigger was made after one of the capture
    /// triggers. SQLite fires a table's triggers newest first, and capture must fire first: an
    /// app's `AFTER` trigger that writes the same row (a counter, a column kept normalized) would
    /// otherwise have its write recorded before the write that fired it, and a peer that applies
    /// both in that order ends with the earlier value, or runs the app's trigger again after the
    /// last of them. `sqlite_schema` gives each new object the next rowid, and SQLite reads it in
    /// rowid order.
    static func outranked(in db: Database) throws -> Set<String> {
        Set(
            try String.fetchAll(
                db,
                sql: """
                    SELECT lower(tbl_name) FROM sqlite_schema WHERE type = 'trigger' GROUP BY lower(tbl_name)
                    HAVING max(CASE WHEN name NOT LIKE 'tidemark\\_%' ESCAPE '\\' THEN rowid END)
                      > min(CASE WHEN name LIKE 'tidemark\\_%' ESCAPE '\\' THEN rowid END)
                    """))
    }

    /// The tracked tables of `tables` whose capture triggers need installing again.
    static func repairs(_ tables: [TrackedTable], in db: Database) throws -> [Repair] {
        var present: [String: String] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT name, sql FROM sqlite_schema
                WHERE (type = 'trigger' OR name LIKE 'tidemark\\_displaced\\_%' ESCAPE '\\') AND name LIKE 'tidemark\\_%' ESCAPE '\\'
                """)
        {
            present[row[0]] = row[1]
        }
        let outranked = try outranked(in: db)
        return try tables.filter { $0.untrackedAt == nil }.compactMap { table in
            let current = present.filter { names(for: table).contains($0.key) }
            let wanted = try sql(for: table, in: db)
            let scratch =
                wanted.contains { $0.name.hasSuffix("_displacing_insert") } ? scratchDDL(for: table).table : nil
            let isOutranked = outranked.contains(table.name.lowercased())
            guard
                isOutranked || current.count != wanted.count || wanted.contains(where: { current[$0.name] != $0.sql })
                    || (scratch != nil && present[Bookkeeping.displacedTable(table)] != scratch)
            else {
                return nil
            }
            // Only a trigger of the four every table has tells of writes gone unrecorded: the
            // displacing ones come and go with the table's unique indexes.
            let base = names(for: table).prefix(4)
            return Repair(
                table: table, present: current,
                missing: wanted.contains { base.contains($0.name) && current[$0.name] == nil }, outranked: isOutranked)
        }
    }

    /// The ids of the tables of `tables` that lack their insert or delete capture trigger, which
    /// every tracked table has: another client removed it, or rebuilt the table. Read before a
    /// schema change that client made is adopted, which makes the triggers anew whatever was there.
    static func lost(_ tables: [TrackedTable], in db: Database) throws -> Set<Int64> {
        let present = Set(
            try String.fetchAll(
                db,
                sql: "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'tidemark\\_%' ESCAPE '\\'"))
        return Set(
            tables.filter { table in
                let names = names(for: table)
                return table.untrackedAt == nil && (!present.contains(names[0]) || !present.contains(names[3]))
            }.map(\.id))
    }

    /// Makes `repair`'s triggers what this build makes: all of them anew when they are
    /// `outranked`, so that they are the newest on their table again.
    static func apply(_ repair: Repair, in db: Database, droppingUnusedScratch: Bool = false) throws {
        if repair.outranked { return try remake(repair.table, in: db) }
        try install(repair.table, in: db, current: repair.present, droppingUnusedScratch: droppingUnusedScratch)
    }

    /// Drops `table`'s capture triggers and makes them all anew, so that they are the newest on it.
    static func remake(_ table: TrackedTable, in db: Database) throws {
        try remove(table, in: db)
        try install(table, in: db)
    }
}
