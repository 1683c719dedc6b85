import GRDB

/// The tables an import changed, and telling the connection's transaction observers about them.
enum ChangedTables {
    /// `tables` and every table a write to one of them may change in turn, transitively: those
    /// whose foreign keys reference it (`ON DELETE CASCADE`, `SET NULL`) and those the app's own
    /// triggers on it name (a counter, an audit table, a full-text index kept in step). The import
    /// pauses only the capture triggers, so the app's run; a table a trigger names but does not
    /// write is told of too, which costs its observers a fetch and nothing else. `appTriggers` is
    /// what `AppTriggers.targets` read.
    static func closing(_ tables: Set<String>, appTriggers: [String: Set<String>], in db: Database) throws
        -> Set<String>
    {
        guard !tables.isEmpty else { return [] }
        var followers: [String: Set<String>] = [:]
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT t.name, f."table" FROM pragma_table_list AS t, pragma_foreign_key_list(t.name) AS f
                WHERE t.schema = 'main' AND t.type = 'table'
                """)
        for row in rows { followers[(row[1] as String).lowercased(), default: []].insert(row[0]) }
        for (table, names) in appTriggers { followers[table, default: []].formUnion(names) }
        var closed = tables
        var frontier = Array(tables)
        while let table = frontier.popLast() {
            for follower in followers[table.lowercased()] ?? [] where closed.insert(follower).inserted {
                frontier.append(follower)
            }
        }
        guard closed.count > tables.count else { return closed }
        // A view a trigger writes through is followed to the tables its triggers change, and is
        // no table that changed itself.
        let views = try String.fetchAll(
            db, sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'view'")
        return closed.subtracting(views.filter { !tables.contains($0) })
    }

    /// Tells the connection's transaction observers that `tables` changed in the current
    /// transaction; they hear of it when it commits.
    static func notify(_ tables: Set<String>, in db: Database) throws {
        guard !tables.isEmpty else { return }
        var region = DatabaseRegion()
        for table in tables {
            // A statement's region, as SQLite reads the table now, with a name of any spelling
            // quoted as Tidemark quotes it.
            region.formUnion(try db.makeStatement(sql: "SELECT * FROM \(table.quotedIdentifier)").databaseRegion)
        }
        try db.notifyChanges(in: region)
    }
}
