import GRDB

/// The tables an import changed, and telling the connection's transaction observers about them.
enum ChangedTables {
    /// `tables` and every table whose foreign keys reference one of them, transitively: foreign-key
    /// actions (`ON DELETE CASCADE`, `SET NULL`) run by the import may have changed their rows.
    static func closing(_ tables: Set<String>, in db: Database) throws -> Set<String> {
        guard !tables.isEmpty else { return [] }
        var referencing: [String: Set<String>] = [:]
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT t.name, f."table" FROM pragma_table_list AS t, pragma_foreign_key_list(t.name) AS f
                WHERE t.schema = 'main' AND t.type = 'table'
                """)
        for row in rows { referencing[(row[1] as String).lowercased(), default: []].insert(row[0]) }
        var closed = tables
        var frontier = Array(tables)
        while let table = frontier.popLast() {
            for child in referencing[table.lowercased()] ?? [] where closed.insert(child).inserted {
                frontier.append(child)
            }
        }
        return closed
    }

    /// Tells the connection's transaction observers that `tables` changed in the current
    /// transaction; they hear of it when it commits.
    static func notify(_ tables: Set<String>, in db: Database) throws {
        guard !tables.isEmpty else { return }
        var region = DatabaseRegion()
        for table in tables { region.formUnion(try Table(table).databaseRegion(db)) }
        try db.notifyChanges(in: region)
    }
}
