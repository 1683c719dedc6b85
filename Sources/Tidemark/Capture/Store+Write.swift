import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// What a write committed.
    public struct Commit: Sendable, Hashable {
        /// This replica's sequence number of the new transaction.
        public var sequence: Int64
        /// The transaction's timestamp.
        public var timestamp: HLCTimestamp
        /// How many row changes it recorded.
        public var changeCount: Int64
    }

    /// Runs `body` in one immediate SQLite transaction and records its changes to tracked tables as
    /// one history transaction. Returns the body's result and the commit, or nil when nothing
    /// tracked changed. Foreign writes pending from other clients are sealed first, separately.
    /// If `body` throws, nothing is applied.
    public func write<T>(
        author: String? = nil, contextName: String? = nil, _ body: (Database) throws -> T
    ) throws -> (T, Commit?) {
        let authorship = Sealer.Authorship(author: author, contextName: contextName, processID: options.processID)
        try authorship.check()
        return try mappingErrors {
            try writeImmediately { db in
                try repairCaptureTriggersIfSchemaChanged(db)
                _ = try sealForeign(db)
                let result = try body(db)
                let commit = try Sealer.seal(db, replica: replica.id, clock: options.clock, as: authorship).map {
                    Commit(sequence: $0.sequence, timestamp: $0.timestamp, changeCount: $0.changeCount)
                }
                return (result, commit)
            }
        }
    }

    /// The rows a statement of `execute(sql:)` returned.
    public struct ResultSet: Sendable {
        /// Column names.
        public var columns: [String]
        /// Rows, each with one value per column.
        public var rows: [[SQLValue]]
    }

    /// Runs SQL (one or more statements) as one tracked transaction. If any statement fails, nothing
    /// is applied and `StoreError.sqlFailed` says why. Statements that return rows have them returned.
    public func execute(sql: String, author: String? = nil, contextName: String? = nil) throws -> ([ResultSet], Commit?)
    {
        do {
            return try write(author: author, contextName: contextName) { db in
                var results: [ResultSet] = []
                var watch = try SchemaWatch(db: db, tables: replicatedTables)
                let wasDefensive = db.setDefensive(true)
                defer { db.setDefensive(wasDefensive) }
                let statements = try db.allStatements(sql: sql)
                while let statement = try statements.next() {
                    if statement.isTransactionControl {
                        throw StoreError.transactionControlNotAllowed(statement: statement.sql)
                    }
                    try watch.willRun(statement)
                    if statement.columnCount > 0 {
                        var rows: [[SQLValue]] = []
                        // Values read as `RawStatement` reads them: text whole, where a GRDB
                        // value holds it up to its first NUL character.
                        let cursor = try Row.fetchCursor(statement)
                        let columns = Int32(statement.columnCount)
                        while try cursor.next() != nil {
                            rows.append((0..<columns).map { RawStatement.value(of: statement.sqliteStatement, at: $0) })
                        }
                        results.append(ResultSet(columns: statement.columnNames, rows: rows))
                    } else {
                        do {
                            try statement.execute()
                        } catch let error as DatabaseError
                            where error.message?.contains("error in trigger \(Bookkeeping.prefix)") == true
                            && SchemaWatch.changesSchema(statement)
                        {
                            // SQLite checks the capture triggers against a dropped column before
                            // anything changes: a migration lifts them.
                            throw StoreError.schemaChangeNeedsMigration(statement: statement.sql)
                        }
                    }
                    try watch.didRun(statement)
                }
                try watch.finish()
                return results
            }
        } catch let error as DatabaseError {
            throw StoreError.sqlFailed(message: error.message ?? "\(error.resultCode)", sql: sql)
        } catch StoreError.database(_, let message) {
            throw StoreError.sqlFailed(message: message, sql: sql)
        }
    }

    /// Seals writes made since the last seal: those of other SQLite clients into one transaction
    /// with no author, context name or process id, and those an app writer marked with an author
    /// (`setTransactionAuthor(_:contextName:in:)`) into one transaction per SQLite transaction, with
    /// that authorship. Reading history does this first, so no captured change is ever missing from
    /// a fetch. Returns the last transaction sealed.
    @discardableResult
    public func sealForeignWrites() throws -> Commit? {
        try mappingErrors {
            let pending = try database.read { db in try Sealer.hasPending(db) }
            guard pending else { return nil }
            return try writeImmediately { db in try sealForeign(db) }
        }
    }

    /// `sealForeignWrites` before a read: on a store opened read-only, which cannot seal, the read
    /// shows what is sealed, and the writes pending stay pending (`Status.pendingChangeCount`).
    func sealForeignWritesBeforeReading() throws {
        do {
            try sealForeignWrites()
        } catch StoreError.storeReadOnly {
            return
        }
    }

    func sealForeign(_ db: Database) throws -> Commit? {
        try Sealer.sealPending(db, replica: replica.id, clock: options.clock).last
            .map { Commit(sequence: $0.sequence, timestamp: $0.timestamp, changeCount: $0.changeCount) }
    }
}
