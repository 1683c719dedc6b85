import Foundation
import GRDB
import TidemarkCore

extension SchemaMigrator {
    /// Runs the migration's SQL and code with the capture triggers in place, so that SQLite
    /// carries a rename of a tracked table or column into them: that is how a rename is told from
    /// a drop and an add. SQLite refuses to drop a column the triggers name: then that table's
    /// triggers are lifted and the migration runs again. Returns the tables whose triggers were
    /// lifted.
    func runSQL(_ migration: Store.Migration, tracked: [TrackedTable]) throws -> Set<Int64> {
        guard migration.changesSchema else { return [] }
        var lifted = Set<Int64>()
        while true {
            do {
                try db.inSavepoint {
                    if let sql = migration.sql {
                        // A table the migration untracks is the app's alone after it.
                        try runStatements(
                            sql,
                            tracked: tracked.filter { table in
                                !migration.untrack.contains { TrackedTable.sameName($0, table.name) }
                            })
                    }
                    if let body = migration.body { try runBody(body, tracked: tracked) }
                    return .commit
                }
                return lifted
            } catch let error as StoreError {
                guard case .migrationFailed(_, let message) = error else { throw error }
                let blocking = tracked.first {
                    !lifted.contains($0.id) && message.contains("error in trigger \(Bookkeeping.prefix)\($0.id)_")
                }
                if let blocking {
                    try CaptureTriggers.remove(blocking, in: db)
                    lifted.insert(blocking.id)
                } else if lifted.count < tracked.count && message.contains("error in trigger \(Bookkeeping.prefix)") {
                    for table in tracked where !lifted.contains(table.id) { try CaptureTriggers.remove(table, in: db) }
                    lifted.formUnion(tracked.map(\.id))
                } else {
                    throw error
                }
            }
        }
    }

    /// Runs the migration's code, naming the statement that failed as SQL statements do. Like
    /// SQL, the code may not write Tidemark's objects (`BookkeepingGuard`).
    func runBody(_ body: (Database) throws -> Void, tracked: [TrackedTable]) throws {
        let watch = try BookkeepingGuard(db, tracked: tracked)
        do {
            try body(db)
        } catch let error as DatabaseError {
            if let table = BookkeepingGuard.table(refusedBy: error) {
                throw StoreError.bookkeepingChanged(statement: error.sql ?? "(the migration's code)", object: table)
            }
            throw StoreError.migrationFailed(
                statement: error.sql ?? "(the migration's code)", message: error.message ?? "\(error.resultCode)")
        }
        try watch.finish()
    }

    /// Runs SQL statements, naming the statement that failed. A column of a `tracked` table that
    /// a statement drops and a later one gives back (added, or another renamed onto it) is
    /// refused: the table ends with the same names, but the column lost its values here and
    /// keeps them on every other replica. The columns are read again after each statement that
    /// changed the schema.
    func runStatements(_ sql: String, tracked: [TrackedTable]) throws {
        let statements = try db.allStatements(sql: sql)
        var columns = try columnNames(of: tracked)
        var dropped: [String: Set<String>] = [:]
        while let statement = try nextStatement(statements) {
            if statement.isTransactionControl {
                throw StoreError.transactionControlNotAllowed(statement: statement.sql)
            }
            // Tidemark's own tables and triggers are its to change, as in `Store.execute`.
            if !statement.isReadonly, let name = SchemaWatch.bookkeepingName(in: statement.sql) {
                throw StoreError.bookkeepingChanged(statement: statement.sql, object: name)
            }
            let cookie = try db.schemaVersion()
            do {
                try statement.execute()
            } catch let error as DatabaseError {
                throw StoreError.migrationFailed(
                    statement: statement.sql, message: error.message ?? "\(error.resultCode)")
            }
            guard try db.schemaVersion() != cookie else { continue }
            let now = try columnNames(of: tracked)
            for (table, names) in columns {
                // A table renamed away or dropped keeps the columns it had last: one made again
                // under its name (a rebuild) is compared with them.
                guard let after = now[table] else { continue }
                // Fewer columns: a drop (a rename keeps the count, and the values).
                if after.count < names.count { dropped[table, default: []].formUnion(names.subtracting(after)) }
                if let back = dropped[table]?.intersection(after).sorted(), !back.isEmpty {
                    throw StoreError.unsupportedMigration(
                        table: table,
                        change:
                            "column(s) \(back.map { "'\($0)'" }.joined(separator: ", ")) dropped and given back in one migration: "
                            + "the values the column held here would be gone and stay on every other replica; drop it in a "
                            + "migration of its own, and add it again in a later one")
                }
            }
            columns.merge(now) { _, new in new }
        }
    }

    /// The next statement of `statements`, a statement that cannot be prepared (a table that does
    /// not exist, say) failing the migration by name.
    private func nextStatement(_ statements: SQLStatementCursor) throws -> Statement? {
        do {
            return try statements.next()
        } catch let error as DatabaseError {
            throw StoreError.migrationFailed(
                statement: error.sql.map(Self.firstStatement) ?? "(the migration's SQL)",
                message: error.message ?? "\(error.resultCode)")
        }
    }

    /// The statement that `sql`, the rest of a migration's SQL from one SQLite could not prepare,
    /// starts with: without the comments before it or the statements after it, and cut at 240
    /// characters.
    static func firstStatement(_ sql: String) -> String {
        var rest = Substring(sql)
        while true {
            rest = rest.drop(while: \.isWhitespace)
            if rest.hasPrefix("--") {
                rest = rest.drop(while: { !$0.isNewline })
            } else if rest.hasPrefix("/*"), let end = rest.range(of: "*/") {
                rest = rest[end.upperBound...]
            } else {
                break
            }
        }
        let statement = rest.prefix { $0 != ";" }.trimmingCharacters(in: .whitespacesAndNewlines)
        return statement.count <= 240 ? statement : statement.prefix(239) + "…"
    }

    /// The stored column names of each of `tracked`, by the table's name, as the schema has them
    /// now, folded as SQLite compares them (`Qty` dropped and `qty` added is the same name). A
    /// generated column holds no value of its own: dropping it and adding it again is how SQLite
    /// changes its expression.
    private func columnNames(of tracked: [TrackedTable]) throws -> [String: Set<String>] {
        var names: [String: Set<String>] = [:]
        for table in tracked {
            let columns = try String.fetchAll(
                db, sql: "SELECT name FROM pragma_table_xinfo(?, 'main') WHERE hidden = 0", arguments: [table.name])
            if !columns.isEmpty { names[table.name] = Set(columns.map(TrackedTable.folded)) }
        }
        return names
    }
}
