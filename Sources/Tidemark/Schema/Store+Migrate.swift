import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A schema change: SQL the app provides, or code that changes the schema through GRDB, and
    /// the tracking changes that go with it.
    public struct Migration: Sendable {
        /// The SQL to run (statements of any kind but transaction control), or nil.
        public var sql: String?
        /// Code to run after `sql`, such as GRDB's `db.alter(table:)`, or nil. Tidemark may run it
        /// more than once, each time in a savepoint rolled back before the next (when SQLite
        /// refuses to drop a column that the capture triggers name, the triggers are lifted and
        /// the migration runs again), so it must do the same each time it runs. Like `sql`, it may
        /// not write Tidemark's `tidemark_` tables or change its objects: that is refused with
        /// `StoreError.bookkeepingChanged`.
        public var body: (@Sendable (Database) throws -> Void)?
        /// Tables to start tracking (created by `sql` or already there); their rows are recorded
        /// as inserts, so peers receive them.
        public var track: [String]
        /// Tables to stop tracking (`sql` may drop them): their changes stop replicating, their
        /// history stays.
        public var untrack: [String]
        /// `TABLE.COLUMN` pairs: for each table named, exactly these columns are kept in tombstones.
        public var preserve: [String]

        /// Creates a migration.
        public init(sql: String? = nil, track: [String] = [], untrack: [String] = [], preserve: [String] = []) {
            self.sql = sql
            self.track = track
            self.untrack = untrack
            self.preserve = preserve
        }

        /// Creates a migration that runs `body` to change the schema.
        public init(
            track: [String] = [], untrack: [String] = [], preserve: [String] = [],
            _ body: @escaping @Sendable (Database) throws -> Void
        ) {
            self.init(track: track, untrack: untrack, preserve: preserve)
            self.body = body
        }

        /// Whether the migration changes anything itself (SQL or code), rather than only tracking.
        var changesSchema: Bool { sql != nil || body != nil }

        /// Whether the migration asks for nothing: it adopts what another client changed.
        var isAdoption: Bool { !changesSchema && track.isEmpty && untrack.isEmpty && preserve.isEmpty }
    }

    /// What a migration changed in tracking.
    public struct MigrationSummary: Sendable, Hashable {
        /// Per tracked table (by its name after the migration), the columns it gained.
        public var addedColumns: [String: [String]] = [:]
        /// Per tracked table (by its name after the migration), its renamed columns: old name to new.
        public var renamedColumns: [String: [String: String]] = [:]
        /// Per tracked table (by its name after the migration), the columns it lost.
        public var droppedColumns: [String: [String]] = [:]
        /// Renamed tracked tables: old name to new.
        public var renamedTables: [String: String] = [:]
        /// Tables tracked from now on.
        public var trackedTables: [String] = []
        /// Tables no longer tracked.
        public var untrackedTables: [String] = []
        /// Tables whose preserved columns changed.
        public var preserveChanged: [String] = []
        /// The schema version the migration made, when it changed what replicates; nil otherwise.
        /// Peers that receive changes written under it hold them until they have made the same
        /// migration.
        public var version: Schema.Version?
        /// Whether tracking changed at all (false for an index, a view, or an untracked table).
        public var changedTracking: Bool { version != nil || !preserveChanged.isEmpty }
        /// Whether the migration's SQL or code changed the schema at all (false for one that only
        /// wrote rows, or held nothing but comments).
        public var changedSchema = false
        /// Whether the migration's SQL or code wrote rows. They are not history: other replicas
        /// have them only by making the same migration.
        public var wroteRows = false
    }

    /// Runs a migration and adapts tracking in the same SQLite transaction: a failure, or a change
    /// tracking cannot follow, leaves the store exactly as it was.
    ///
    /// Supported: new tracked tables, added columns (nullable or with a DEFAULT), dropped columns,
    /// renamed columns and tables (they keep their identity: a peer's write under the old name
    /// lands in the renamed column), changed preserved columns, untracked tables, and any change
    /// that leaves tracked tables as they are (indexes, views, triggers, untracked tables).
    /// Refused with `StoreError.unsupportedMigration`: changing, renaming or dropping a key
    /// column, dropping a tracked table without untracking it, and what cannot be told apart from
    /// a rename: columns both dropped and added or renamed in one table in one migration, or a
    /// table rebuilt (created anew and renamed into place) with other column names. Make such
    /// changes in separate migrations. Existing history and row metadata are not rewritten.
    ///
    /// Peers that have not migrated hold bundles written under the new version, and apply them
    /// once they migrate too; this replica applies their bundles meanwhile.
    ///
    /// Foreign keys, when the connection enforces them, are not enforced while the migration runs
    /// and are checked before it commits, as in SQLite's procedure for changing a table: a row
    /// left referring to one that is not there fails it with `StoreError.migrationFailed`.
    @discardableResult
    public func migrate(_ migration: Migration) throws -> MigrationSummary {
        try mappingErrors {
            try database.writeWithoutTransaction { db in
                // As SQLite's procedure for changing a table, and GRDB's migrator, do: foreign keys
                // are not enforced while the migration runs (a parent table rebuilt would cascade
                // its DROP into every child row, a write no replica records), and are checked
                // before it commits. Inside a transaction the pragma cannot change.
                let enforced = try Bool.fetchOne(db, sql: "PRAGMA foreign_keys") ?? false
                if enforced { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
                defer { if enforced { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
                return try perform(migration, checkingForeignKeys: enforced, db)
            }
        }
    }

    /// Runs a migration on the app's writer, inside the transaction `db` is in — a GRDB
    /// `DatabaseMigrator` migration's, say — so that the app's migration, its bookkeeping and
    /// Tidemark's tracking changes commit together or not at all:
    ///
    /// ```swift
    /// try migrator.migrate(dbPool, upTo: "v1")  // the schema the store was first created from
    /// let store = try Store.initialize(in: dbPool, setup: setup).store
    /// migrator.registerMigration("v2") { db in
    ///     try store.migrate(Store.Migration(track: ["tag"]) { db in
    ///         try db.alter(table: "note") { t in t.add(column: "color", .text) }
    ///         try db.create(table: "tag") { t in
    ///             t.primaryKey("id", .text)
    ///             t.column("name", .text)
    ///         }
    ///     }, in: db)
    /// }
    /// try migrator.migrate(dbPool)
    /// ```
    ///
    /// It does what `migrate(_:)` does, in a savepoint: when it throws, what it did is undone and
    /// the caller's transaction goes on (a GRDB migration that rethrows rolls back whole). Outside a
    /// transaction it runs in one of its own. A schema change the app commits on its writer
    /// *without* this call is adopted as soon as it commits (`adoptedSchemaChange`); this call also
    /// supports what adoption cannot (dropped columns, tables to track or untrack).
    ///
    /// Throws `StoreError.notAttached` when the store was opened by path or `db` is another
    /// connection.
    @discardableResult
    public func migrate(_ migration: Migration, in db: Database) throws -> MigrationSummary {
        guard attachedWriter != nil, try WriterAuthorship.isInstalled(on: db),
            Data.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.publicKey)) == Data(publicKey)
        else {
            throw StoreError.notAttached(path: path)
        }
        return try mappingErrors { try perform(migration, checkingForeignKeys: false, db) }
    }

    /// Runs `migration` in a savepoint of the transaction `db` is in, or in an immediate
    /// transaction of its own, and keeps the store's registrations as the database has them
    /// whether it commits or rolls back. With `checkingForeignKeys`, its own transaction commits
    /// only when no row breaks a foreign key.
    func perform(_ migration: Migration, checkingForeignKeys: Bool, _ db: Database) throws
        -> MigrationSummary
    {
        var summary: MigrationSummary!
        let run = {
            try db.inSavepoint {
                summary = try Store.ownSchemaChange(db) { try SchemaMigrator(db: db, store: self).run(migration) }
                return .commit
            }
        }
        do {
            if db.isInsideTransaction {
                try registrations.refresh(db)
                let saved = registrations.saved
                try run()
                // Only `migrate(_:in:)` runs inside a transaction, on the app's writer (it checked):
                // the migration sealed what the writer had marked earlier in the transaction.
                try WriterAuthorship.endMark(in: db)
                // The caller may still roll back its transaction, and the migration with it, or a
                // savepoint around the migration and then commit: read the registrations again
                // at commit, and put them back at a rollback (GRDB refuses statements then).
                db.afterNextTransaction(
                    onCommit: { [registrations] db in try? registrations.reload(db) },
                    onRollback: { [registrations] _ in registrations.restore(saved) })
            } else {
                try db.inTransaction(.immediate) {
                    try run()
                    if checkingForeignKeys { try Self.checkForeignKeys(db) }
                    return .commit
                }
            }
        } catch {
            // The migrator read the registrations it was making; they were rolled back.
            try? registrations.reload(db)
            throw error
        }
        try registrations.refresh(db)
        return summary
    }

    /// Throws `StoreError.migrationFailed` for the first row that breaks a foreign key, naming it
    /// (step 10 of SQLite's procedure for changing a table, as GRDB's migrator runs it).
    private static func checkForeignKeys(_ db: Database) throws {
        guard let violation = try db.foreignKeyViolations().next() else { return }
        let row = violation.originRowID.map { "row \($0)" } ?? "a row"
        throw StoreError.migrationFailed(
            statement: "PRAGMA foreign_key_check",
            message:
                "\(row) of '\(violation.originTable)' refers to a row of '\(violation.destinationTable)' that is not there"
        )
    }
}
