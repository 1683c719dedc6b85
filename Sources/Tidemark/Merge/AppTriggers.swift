import GRDB

/// The app's own triggers, as far as Tidemark needs them: which tables their SQL names. They run
/// when an import merges rows (only capture is paused), and may write other tables then.
enum AppTriggers {
    /// For each table (lowercased) with triggers of the app's, the tables and views of the main
    /// schema their SQL names: another anywhere, the trigger's own table where its body names it
    /// (a trigger that writes other rows of its table). A view's `INSTEAD OF` triggers name what
    /// a write through it changes.
    static func targets(_ db: Database) throws -> [String: Set<String>] {
        let triggers = try Row.fetchAll(
            db,
            sql: """
                SELECT tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\'
                UNION ALL
                SELECT tbl_name, sql FROM sqlite_temp_schema WHERE type = 'trigger' AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\'
                """)
        guard !triggers.isEmpty else { return [:] }
        let tables = try String.fetchAll(
            db,
            sql: "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'virtual', 'view')")
        let byName = Dictionary(tables.map { ($0.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        var targets: [String: Set<String>] = [:]
        for trigger in triggers {
            let table = (trigger[0] as String).lowercased()
            let words = words(in: trigger[1] ?? "")
            // `ON table` comes before the body, which begins at the first BEGIN.
            let body = words.firstIndex(of: "begin").map { words[$0...] } ?? []
            for word in Set(words) where word != table || body.contains(table) {
                if let name = byName[word] { targets[table, default: []].insert(name) }
            }
        }
        return targets
    }

    /// The names `sql` holds, lowercased, in order: bare words and quoted identifiers (`"…"`,
    /// `` `…` ``, `[…]`), not the text of string literals (`'…'`).
    private static func words(in sql: String) -> [String] {
        var words: [String] = []
        var word = ""
        var quote: Character?
        for c in sql {
            if let open = quote {
                if c == (open == "[" ? "]" : open) {
                    // A string literal's text is no name.
                    if open != "'" { words.append(word.lowercased()) }
                    word = ""
                    quote = nil
                } else {
                    word.append(c)
                }
            } else if c == "\"" || c == "`" || c == "[" || c == "'" {
                if !word.isEmpty { words.append(word.lowercased()) }
                word = ""
                quote = c
            } else if c.isLetter || c.isNumber || c == "_" || c == "$" {
                word.append(c)
            } else {
                if !word.isEmpty { words.append(word.lowercased()) }
                word = ""
            }
        }
        if !word.isEmpty { words.append(word.lowercased()) }
        return words
    }

    /// The tables (and views) that the app's triggers on `tables` name, and those that the
    /// triggers on these name, and so on: those whose rows a write to `tables` may change through
    /// such a trigger (lowercased; one of `tables` only when a trigger's body names it).
    /// `targets` is what `targets(_:)` read.
    static func reach(from tables: Set<String>, targets: [String: Set<String>]) -> Set<String> {
        guard !targets.isEmpty else { return [] }
        var reached: Set<String> = []
        var frontier = tables.map { $0.lowercased() }
        while let table = frontier.popLast() {
            for target in targets[table] ?? [] where reached.insert(target.lowercased()).inserted {
                frontier.append(target.lowercased())
            }
        }
        return reached
    }
}
