import GRDB

/// The tables an import changed, and telling the connection's transaction observers about them.
enum ChangedTables {
    /// `tables` and every table a write to one of them may change in turn, transitively: those
    /// whose foreign keys reference it (`ON DELETE CASCADE`, `SET NULL`) and those the app's own
    /// triggers on it name (a counter, an audit table, a full-text index kept in step). The import
    /// pauses only the capture triggers, so the app's run; a table a trigger names but does not
    /// write is told of too, which costs its observers a fetch and nothing else.
    static func closing(_ tables: Set<String>, in db: Database) throws -> Set<String> {
        guard !tables.isEmpty else { return [] }
        var followers: [String: Set<String>] = [:]
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT t.name, f."table" FROM pragma_table_list AS t, pragma_foreign_key_list(t.name) AS f
                WHERE t.schema = 'main' AND t.type = 'table'
                """)
        for row in rows { followers[(row[1] as String).lowercased(), default: []].insert(row[0]) }
        for (table, names) in try triggerTargets(db) { followers[table, default: []].formUnion(names) }
        var closed = tables
        var frontier = Array(tables)
        while let table = frontier.popLast() {
            for follower in followers[table.lowercased()] ?? [] where closed.insert(follower).inserted {
                frontier.append(follower)
            }
        }
        return closed
    }

    /// For each table (lowercased) with triggers of the app's, the other tables of the main
    /// schema their SQL names.
    private static func triggerTargets(_ db: Database) throws -> [String: Set<String>] {
        let triggers = try Row.fetchAll(
            db,
            sql: """
                SELECT tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\'
                UNION ALL
                SELECT tbl_name, sql FROM sqlite_temp_schema WHERE type = 'trigger' AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\'
                """)
        guard !triggers.isEmpty else { return [:] }
        let tables = try String.fetchAll(
            db, sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'virtual')")
        let byName = Dictionary(tables.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        var targets: [String: Set<String>] = [:]
        for trigger in triggers {
            let table = (trigger[0] as String).lowercased()
            for word in words(in: trigger[1] ?? "") {
                if let name = byName[word], word != table { targets[table, default: []].insert(name) }
            }
        }
        return targets
    }

    /// The names `sql` holds, lowercased: bare words and quoted identifiers (`"…"`, `` `…` ``, `[…]`),
    /// not the text of string literals (`'…'`).
    private static func words(in sql: String) -> Set<String> {
        var words: Set<String> = []
        var word = ""
        var quote: Character?
        for c in sql {
            if let open = quote {
                if c == (open == "[" ? "]" : open) {
                    // A string literal's text is no name.
                    if open != "'" { words.insert(word.lowercased()) }
                    word = ""
                    quote = nil
                } else {
                    word.append(c)
                }
            } else if c == "\"" || c == "`" || c == "[" || c == "'" {
                if !word.isEmpty { words.insert(word.lowercased()) }
                word = ""
                quote = c
            } else if c.isLetter || c.isNumber || c == "_" || c == "$" {
                word.append(c)
            } else {
                if !word.isEmpty { words.insert(word.lowercased()) }
                word = ""
            }
        }
        if !word.isEmpty { words.insert(word.lowercased()) }
        return words
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
