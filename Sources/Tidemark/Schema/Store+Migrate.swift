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
    @discardableResult
    public func migrate(_ migration: Migration) throws -> MigrationSummary {
        try mappingErrors { try database.writeWithoutTransaction { db in try perform(migration, db) } }
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
    /// transaction it runs in one of its own. A schema change the app makes on its writer *without*
    /// this call is adopted when the store is next opened, like another client's; this call also
    /// supports what adoption cannot (dropped columns, tables to track or untrack).
    ///
    /// Throws `StoreError.notAttached` when the store was opened by path or `db` is another
    /// connection.
    @discardableResult
    public func migrate(_ migration: Migration, in db: Database) throws -> MigrationSummary {
        guard authorship != nil, try WriterAuthorship.isInstalled(on: db),
            Data.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.publicKey)) == Data(publicKey)
        else {
            throw StoreError.notAttached(path: path)
        }
        return try mappingErrors { try perform(migration, db) }
    }

    /// Runs `migration` in a savepoint of the transaction `db` is in, or in an immediate
    /// transaction of its own, and keeps the store's registrations as the database has them
    /// whether it commits or rolls back.
    private func perform(_ migration: Migration, _ db: Database) throws -> MigrationSummary {
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
}

/// Runs one migration inside the caller's write transaction.
struct SchemaMigrator {
    let db: Database
    let store: Store

    func run(_ migration: Store.Migration) throws -> Store.MigrationSummary {
        _ = try store.sealForeign(db)
        // Kept digests can be vouched for only while no other client changed the schema: then the
        // tables have their registered columns, and the fold hashes what it folds. Otherwise the
        // next digest counts every table again anyway.
        let digestsTrusted = try RowDigests.trusted(db)
        try LocalFold(db: db, store: store, hashesRows: digestsTrusted).run()
        if !digestsTrusted { try RowDigests.forgetAll(db) }
        let registrations = try TrackedTable.fetchAll(db, includingUntracked: true)
        let before = registrations.filter { $0.untrackedAt == nil }
        let lastChange = try Sealer.lastChangeID(db)
        let schemaBefore = try Self.schemaText(db)
        let changesBefore = db.totalChangesCount
        let cookieBefore = try db.schemaVersion()
        let lifted = try runSQL(migration, tracked: before)
        // Rows written by the migration, tracked or not, captured or not: a write to a column the
        // migration added is not captured, since the triggers do not know the column yet.
        let wroteRows = db.totalChangesCount != changesBefore
        let schemaAfter = try Self.schemaText(db)
        let changedSchema = try db.schemaVersion() != cookieBefore
        let written = Set(
            try Int64.fetchAll(
                db, sql: "SELECT DISTINCT table_id FROM tidemark_changes WHERE id > ?", arguments: [lastChange]))
        // What the SQL itself wrote is not history: every replica runs the same migration. Nor is
        // the author mark an app's writer put on it. (Marks of earlier changes went when they were
        // sealed, above.)
        try db.execute(sql: "DELETE FROM tidemark_changes WHERE id > ?", arguments: [lastChange])
        try WriterAuthorship.removeMarks(after: lastChange, in: db)
        for name in migration.untrack where !before.contains(where: { $0.name == name && !$0.isInternal }) {
            throw StoreError.notTracked(name)
        }
        let position = try SchemaLineage.position(db) + 1
        var summary = Store.MigrationSummary()
        summary.changedSchema = changedSchema
        var operations: [Schema.Operation] = []
        var after: [TrackedTable] = []
        let preserve = try preservedByTable(
            migration.preserve, tracked: before.map(\.name) + migration.track, untracked: migration.untrack)
        for old in before {
            if migration.untrack.contains(old.name) {
                try RowDigests.forget(old.id, db)
                try untrack(old, at: position)
                summary.untrackedTables.append(old.name)
                operations.append(.untrack(table: old.name, keyColumns: old.keyColumns, columns: old.columns))
                continue
            }
            let noted = operations.count
            let table = try carry(
                old, through: migration, lifted: lifted, foreign: !digestsTrusted,
                schemas: (schemaBefore, schemaAfter), at: position, preserve: preserve, summary: &summary,
                operations: &operations)
            let rewritten = lifted.contains(old.id) || written.contains(old.id)
            // A change another client made and the migration adopts may have come with writes.
            if try mayChangeRowHashes(
                old, table, operations[noted...], rewritten: rewritten,
                wroteRows: wroteRows || !migration.changesSchema, schemas: (schemaBefore, schemaAfter))
            {
                try RowDigests.forget(old.id, db)
            }
            after.append(table)
        }
        try settleRenames(after, before: before)
        var nextID = (registrations.map(\.id).max() ?? 0) + 1
        for name in migration.track
        where !after.contains(where: { $0.name == name }) && !summary.trackedTables.contains(name) {
            after.append(try track(name, id: nextID, preserving: preserve[name] ?? []))
            nextID += 1
            summary.trackedTables.append(name)
            operations.append(.track(table: name, keyColumns: after.last!.keyColumns, columns: after.last!.columns))
        }
        if !operations.isEmpty { summary.version = try SchemaLineage.append(db, Schema.Change(operations)) }
        try store.registrations.reload(db)
        for name in summary.trackedTables {
            try Store.adoptRows(of: after.first { $0.name == name }!, in: db)
        }
        if !summary.trackedTables.isEmpty {
            _ = try Sealer.seal(
                db, replica: store.replica.id, clock: store.options.clock,
                as: .init(author: nil, contextName: "adopt", processID: store.options.processID))
        }
        return summary
    }

    /// Carries a tracked table through the migration: reads it again unless the SQL left it and
    /// its triggers alone, applies `--preserve`, notes what changed (`note`), grows its row
    /// metadata, and reinstalls its triggers where needed. Returns the table as it is now.
    private func carry(
        _ old: TrackedTable, through migration: Store.Migration, lifted: Set<Int64>, foreign: Bool,
        schemas: (before: [String: String], after: [String: String]), at position: Int, preserve: [String: [String]],
        summary: inout Store.MigrationSummary, operations: inout [Schema.Operation]
    ) throws -> TrackedTable {
        // A table whose definition and triggers the SQL left alone needs no reading. Every table is
        // read without SQL (the change to adopt was made before), and after a schema change that
        // was not Tidemark's (`foreign`): the app may have changed a table earlier in the
        // transaction `Store.migrate(_:in:)` runs in.
        let untouched =
            migration.changesSchema && !foreign && !lifted.contains(old.id)
            && ([old.name] + CaptureTriggers.names(for: old)).allSatisfy { schemas.before[$0] == schemas.after[$0] }
        var table = untouched ? old : try followed(old, lifted: lifted.contains(old.id), at: position)
        if let columns = preserve[table.name] ?? preserve[old.name] {
            let described = try TrackedTable.describe(
                table.name, id: table.id, preserving: columns, in: db, allowReserved: table.isInternal)
            let indexes = described.preservedIndexes.map { described.columns[$0] }.compactMap(table.index(of:))
                .sorted()
            if indexes.map({ table.slots[$0] }) != old.preservedIndexes.map({ old.slots[$0] }) {
                summary.preserveChanged.append(table.name)
            }
            table.preservedIndexes = indexes
        }
        operations += note(old: old, new: table, in: &summary)
        if table.slotCount > old.slotCount, table.sharedClockWidth == nil {
            // Rows saved before keep a shared clock that covers only the slots they had (`w`, or
            // this width while `w` is NULL); the row metadata is neither altered nor rewritten.
            table.sharedClockWidth = old.slotCount
        }
        if table != old {
            var registered = table
            if table.name != old.name {
                // A renamed table and the conflicts listed for it wait under a name of their own
                // until every table is carried (`settleRenames`): another may still hold the new one.
                registered.name = Self.parkedName(of: table)
                try db.execute(
                    sql: "UPDATE tidemark_conflicts SET table_name = ? WHERE table_name = ?",
                    arguments: [registered.name, old.name])
            }
            try registered.update(db)
        }
        // A table rebuilt with the same columns (created anew, filled, renamed into place) lost
        // its triggers with the table it replaced.
        let triggersGone = CaptureTriggers.names(for: old).contains {
            schemas.before[$0] != nil && schemas.after[$0] == nil
        }
        if table != old || lifted.contains(old.id) || triggersGone {
            try Bookkeeping.ensureChangeColumns(db, for: table)
            // The triggers as the SQL left them: those that already read as `table` needs stay.
            try CaptureTriggers.install(table, in: db, current: schemas.after)
        }
        return table
    }

    /// The name a renamed table is registered under while the migration carries the others: a
    /// reserved one, which no user table has.
    private static func parkedName(of table: TrackedTable) -> String { "\(Bookkeeping.prefix)renaming_\(table.id)" }

    /// Gives each renamed table, and the conflicts listed for it, its new name, once every table
    /// has left the name it had: tables may swap names, or take the name of one untracked.
    private func settleRenames(_ after: [TrackedTable], before: [TrackedTable]) throws {
        for table in after where before.contains(where: { $0.id == table.id && $0.name != table.name }) {
            try table.update(db)
            try db.execute(
                sql: "UPDATE tidemark_conflicts SET table_name = ? WHERE table_name = ?",
                arguments: [table.name, Self.parkedName(of: table)])
        }
    }

    /// Whether the migration may have changed the hash of some row of `old`, now `new`, which
    /// `operations` took it to (Protocol/exchange.md §8.1), so that its digest must be counted
    /// again: its rows were written by the SQL (`rewritten`: captured, or written with its
    /// triggers lifted), its capture triggers were changed by the SQL, the table or one of its
    /// columns was renamed or dropped (names are hashed), or a column was added with a default
    /// that is not its hash default (every row then holds it: a default the column's affinity
    /// converts, an expression) or while rows may have been written (`wroteRows`: the triggers do
    /// not capture a write to a column they do not know yet). Adding a nullable column, or one
    /// whose default is a literal such as `DEFAULT 'none'` or `DEFAULT 0`, changes no row's hash,
    /// and nothing else is counted: a migration's cost does not grow with the rows of the tables it
    /// leaves alone.
    private func mayChangeRowHashes(
        _ old: TrackedTable, _ new: TrackedTable, _ operations: ArraySlice<Schema.Operation>, rewritten: Bool,
        wroteRows: Bool, schemas: (before: [String: String], after: [String: String])
    ) throws -> Bool {
        if rewritten { return true }
        if CaptureTriggers.names(for: old).contains(where: { schemas.before[$0] != schemas.after[$0] }) { return true }
        var added: [String] = []
        for operation in operations {
            guard case .addColumn(_, let column) = operation else { return true }  // a rename or a drop
            added.append(column)
        }
        if added.isEmpty { return false }
        return try wroteRows || HashDefaults.changeRowHashes(adding: added, to: new.name, db)
    }

    /// Starts tracking the table `name` (`--track`): registers it, creates its row metadata and
    /// installs its capture triggers.
    private func track(_ name: String, id: Int64, preserving columns: [String]) throws -> TrackedTable {
        let table = try TrackedTable.describe(name, id: id, preserving: columns, in: db)
        try table.insert(db)
        try Bookkeeping.createRowMetadata(db, for: table)
        try Bookkeeping.ensureChangeColumns(db, for: table)
        try CaptureTriggers.install(table, in: db)
        return table
    }

    /// Every table's and trigger's SQL, by name.
    private static func schemaText(_ db: Database) throws -> [String: String] {
        var text: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'trigger')") {
            text[row[0]] = row[1] ?? ""
        }
        return text
    }

    /// Runs the migration's SQL and code with the capture triggers in place, so that SQLite
    /// carries a rename of a tracked table or column into them: that is how a rename is told from
    /// a drop and an add. SQLite refuses to drop a column the triggers name: then that table's
    /// triggers are lifted and the migration runs again. Returns the tables whose triggers were
    /// lifted.
    private func runSQL(_ migration: Store.Migration, tracked: [TrackedTable]) throws -> Set<Int64> {
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
    private func runBody(_ body: (Database) throws -> Void, tracked: [TrackedTable]) throws {
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
    private func runStatements(_ sql: String) throws {
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

    /// Stops tracking `table`: its triggers and row metadata go, its registration stays for the
    /// history written before.
    private func untrack(_ table: TrackedTable, at position: Int) throws {
        try CaptureTriggers.remove(table, in: db)
        try db.execute(sql: "DROP TABLE IF EXISTS \(Bookkeeping.rowMetadataTable(table))")
        var untracked = table
        untracked.untrackedAt = position
        try untracked.update(db)
    }

    /// The registration of `old` after the SQL ran, or a refusal naming what tracking cannot follow.
    ///
    /// Where its triggers stayed, SQLite renamed the table and columns in them as it renamed them
    /// in the table: the insert trigger names every column in slot order. Where they were lifted,
    /// or the table was rebuilt (its triggers dropped with it), columns are matched by name.
    /// Long by design: the refusals are checked in this order, each with the message it gives.
    private func followed(_ old: TrackedTable, lifted: Bool, at position: Int) throws -> TrackedTable {
        let trigger =
            lifted
            ? nil
            : try Row.fetchOne(
                db, sql: "SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                arguments: [CaptureTriggers.names(for: old)[0]])
        var names = Dictionary(uniqueKeysWithValues: zip(old.slots, old.columns))
        var tableName = old.name
        if let trigger {
            tableName = trigger[0]
            let renamed = CaptureTriggers.insertedColumns(in: trigger[1])
            if renamed.count == old.columns.count { names = Dictionary(uniqueKeysWithValues: zip(old.slots, renamed)) }
        }
        guard let shape = try TrackedTable.shapeIfPresent(of: tableName, in: db) else {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "it was dropped\(lifted ? " or renamed" : ""); untrack a table to drop it (--untrack \(old.name))")
        }
        let renamedKeys = old.keyIndexes.map { names[old.slots[$0]]! }
        if renamedKeys != old.keyColumns {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "its key column '\(old.keyColumns.joined(separator: ", "))' was renamed; the key is each row's identity on every replica"
            )
        }
        if shape.keyColumns != old.keyColumns {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "its primary key changed from (\(old.keyColumns.joined(separator: ", "))) to (\(shape.keyColumns.joined(separator: ", "))); "
                    + "the key is each row's identity on every replica")
        }
        let reserved = old.name.lowercased().hasPrefix(Bookkeeping.prefix)
        if let (reason, _) = try TrackedTable.refusal(of: tableName, shape, in: db, allowReserved: reserved) {
            throw StoreError.unsupportedMigration(table: old.name, change: "it could no longer be tracked: \(reason)")
        }
        let gone = old.slots.filter { !shape.columns.contains(names[$0]!) }
        let added = shape.columns.filter { !names.values.contains($0) }
        if trigger == nil && !gone.isEmpty && !added.isEmpty {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "column(s) \(gone.map { "'\(names[$0]!)'" }.joined(separator: ", ")) went and \(added.map { "'\($0)'" }.joined(separator: ", ")) "
                    + "came in a migration that also dropped or rebuilt the table, so a rename cannot be told from a drop and an add; "
                    + "rename in a migration of its own")
        }
        var table = old
        table.name = tableName
        var next = old.slotCount
        let slotByName = Dictionary(uniqueKeysWithValues: names.map { ($0.value, $0.key) })
        table.columns = shape.columns
        table.slots = shape.columns.map { name in
            if let slot = slotByName[name], !gone.contains(slot) { return slot }
            next += 1
            return next - 1
        }
        table.keyIndexes = shape.keyColumns.map { shape.columns.firstIndex(of: $0)! }
        table.preservedIndexes = old.preservedIndexes.compactMap { table.slots.firstIndex(of: old.slots[$0]) }.sorted()
        table.retired += gone.map { TrackedTable.Retired(slot: $0, name: names[$0]!, droppedAt: position) }
        let limit = Bookkeeping.maxTrackedColumns(db, keyCount: table.keyIndexes.count)
        if table.slotCount > limit {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "it would have \(table.slotCount) column slots (dropped columns keep theirs); at most \(limit) can be tracked"
            )
        }
        return table
    }

    /// The schema operations that turn `old` into `new`, noted in `summary` too. Operations name
    /// the table as before the migration (Protocol/schema.md §3).
    private func note(old: TrackedTable, new: TrackedTable, in summary: inout Store.MigrationSummary) -> [Schema
        .Operation]
    {
        var operations: [Schema.Operation] = []
        let oldNames = Dictionary(uniqueKeysWithValues: zip(old.slots, old.columns))
        for (slot, name) in zip(new.slots, new.columns) {
            if let was = oldNames[slot] {
                guard was != name else { continue }
                operations.append(.renameColumn(table: old.name, column: was, to: name))
                summary.renamedColumns[new.name, default: [:]][was] = name
            } else {
                operations.append(.addColumn(table: old.name, column: name))
                summary.addedColumns[new.name, default: []].append(name)
            }
        }
        for column in new.retired where !old.retired.contains(column) {
            operations.append(.dropColumn(table: old.name, column: column.name))
            summary.droppedColumns[new.name, default: []].append(column.name)
        }
        if new.name != old.name {
            operations.append(.renameTable(table: old.name, to: new.name))
            summary.renamedTables[old.name] = new.name
        }
        return operations
    }

    /// The `preserve` arguments grouped by table, checked against the tables tracked after.
    private func preservedByTable(_ arguments: [String], tracked: [String], untracked: [String]) throws -> [String:
        [String]]
    {
        var preserve: [String: [String]] = [:]
        for argument in arguments {
            let parts = argument.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw StoreError.invalidPreserve(argument, reason: "expected TABLE.COLUMN")
            }
            guard tracked.contains(parts[0]), !untracked.contains(parts[0]) else {
                throw StoreError.invalidPreserve(argument, reason: "table '\(parts[0])' is not tracked")
            }
            preserve[parts[0], default: []].append(parts[1])
        }
        return preserve
    }
}
