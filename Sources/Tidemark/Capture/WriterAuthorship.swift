import Foundation
import GRDB
import TidemarkCore

/// Authorship for the writes an app makes through its own GRDB writer, once a store is attached
/// to it (Core Data's `transactionAuthor` and context `name`).
///
/// On the writer's connection only, a TEMP trigger on `tidemark_changes` marks the changes of each
/// SQLite transaction that has an author set: one `tidemark_authorship` row covering their change
/// ids, written in the same transaction, so whichever process seals them later (the `sync` CLI
/// included) gives them their own history transaction with that author. Other clients never see
/// the trigger, and their writes stay unattributed. `AttachedWriter` ends each transaction's mark
/// as it commits, and seals it at once.
///
/// Per connection: `temp.tidemark_author` holds the default authorship (scope 0) and the current
/// transaction's (scope 1); `temp.tidemark_open` the first change id of the transaction's mark.
enum WriterAuthorship {
    /// Installs the authorship objects on the writer's connection `db`, once per connection.
    static func install(in db: Database) throws {
        let installed =
            try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM temp.sqlite_master WHERE name = 'tidemark_author'")
            ?? false
        guard !installed else { return }
        try db.execute(
            sql: """
                CREATE TEMP TABLE tidemark_author(
                    scope INTEGER PRIMARY KEY CHECK (scope IN (0, 1)), author TEXT, context TEXT, pid INTEGER);
                CREATE TEMP TABLE tidemark_open(id INTEGER PRIMARY KEY CHECK (id = 1), first INTEGER NOT NULL);
                CREATE TEMP TRIGGER tidemark_authorship AFTER INSERT ON main.tidemark_changes
                WHEN NEW.gen IS NULL AND EXISTS (SELECT 1 FROM temp.tidemark_author)
                BEGIN
                  INSERT OR IGNORE INTO tidemark_open(id, first) VALUES (1, NEW.id);
                  INSERT INTO tidemark_authorship(first_change, last_change, author, context, pid)
                    SELECT NEW.id, NEW.id, author, context, pid FROM temp.tidemark_author
                    WHERE (SELECT first FROM temp.tidemark_open) = NEW.id ORDER BY scope DESC LIMIT 1;
                  UPDATE tidemark_authorship SET last_change = NEW.id
                    WHERE first_change = (SELECT first FROM temp.tidemark_open) AND first_change <> NEW.id;
                END;
                """)
        // Imported changes carry their generation (gen IS NOT NULL), so the trigger skips them.
        // Unqualified names in the body (SQLite allows no other in a trigger's writes) resolve
        // to the temp tables first, and tidemark_authorship exists only in main.
    }

    /// Sets the authorship of `scope`: 0 for every later transaction, 1 for the current one.
    static func set(_ authorship: Sealer.Authorship, scope: Int, in db: Database) throws {
        if authorship.author == nil && authorship.contextName == nil {
            try db.execute(sql: "DELETE FROM temp.tidemark_author WHERE scope = ?", arguments: [scope])
        } else {
            try db.execute(
                sql: "INSERT OR REPLACE INTO temp.tidemark_author(scope, author, context, pid) VALUES (?, ?, ?, ?)",
                arguments: [scope, authorship.author, authorship.contextName, authorship.processID])
        }
        guard scope == 1 else { return }
        if authorship.author == nil && authorship.contextName == nil {
            // Cleared: the changes this transaction already made take the default authorship, as
            // its later ones do, or, without one, no mark at all, as when nothing was set.
            try db.execute(
                sql: """
                    UPDATE main.tidemark_authorship SET (author, context, pid) =
                      (SELECT author, context, pid FROM temp.tidemark_author WHERE scope = 0)
                    WHERE first_change = (SELECT first FROM temp.tidemark_open)
                      AND EXISTS (SELECT 1 FROM temp.tidemark_author WHERE scope = 0);
                    DELETE FROM main.tidemark_authorship WHERE first_change = (SELECT first FROM temp.tidemark_open)
                      AND NOT EXISTS (SELECT 1 FROM temp.tidemark_author);
                    DELETE FROM temp.tidemark_open WHERE NOT EXISTS (SELECT 1 FROM temp.tidemark_author);
                    """)
        } else {
            // Changes this transaction already made under the default authorship take the new one.
            try db.execute(
                sql:
                    "UPDATE main.tidemark_authorship SET author = ?, context = ?, pid = ? WHERE first_change = (SELECT first FROM temp.tidemark_open)",
                arguments: [authorship.author, authorship.contextName, authorship.processID])
        }
    }

    /// Ends the current transaction's mark on the writer's connection `db`: its later changes
    /// start a mark of their own. Done after a migration sealed the changes the mark covered
    /// earlier in the transaction.
    static func endMark(in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM temp.tidemark_open").execute()
    }

    /// Ends the committed transaction's mark and its own authorship (scope 1): the next
    /// transaction starts from the default authorship.
    static func endTransaction(in db: Database) throws {
        try endMark(in: db)
        try db.cachedStatement(sql: "DELETE FROM temp.tidemark_author WHERE scope = 1").execute()
    }

    /// Removes the marks of pending changes after `change`, which are being deleted (a migration's
    /// own writes are not history): change ids are used again, and a mark left behind would name
    /// the author of the next changes, or clash with the writer's next mark.
    static func removeMarks(after change: Int64, in db: Database) throws {
        try db.execute(sql: "DELETE FROM tidemark_authorship WHERE first_change > ?", arguments: [change])
    }

    /// Whether `db` is a connection the authorship objects were installed on.
    static func isInstalled(on db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT count(*) > 0 FROM temp.sqlite_master WHERE name = 'tidemark_author'")
            ?? false
    }
}
