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
                    if let sql = migration.sql { try runStatements(sql) }
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

    /// Runs SQL statements, naming the statement that failed.
    func runStatements(_ sql: String) throws {
        let statements = try db.allStatements(sql: sql)
        while let statement = try statements.next() {
            if statement.isTransactionControl {
                throw StoreError.transactionControlNotAllowed(statement: statement.sql)
            }
            // Tidemark's own tables and triggers are its to change, as in `Store.execute`.
            if !statement.isReadonly, let name = SchemaWatch.bookkeepingName(in: statement.sql) {
                throw StoreError.bookkeepingChanged(statement: statement.sql, object: name)
            }
            do {
                try statement.execute()
            } catch let error as DatabaseError {
                throw StoreError.migrationFailed(
                    statement: statement.sql, message: error.message ?? "\(error.resultCode)")
            }
        }
    }
}
