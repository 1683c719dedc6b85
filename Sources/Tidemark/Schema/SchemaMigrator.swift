import Foundation
import GRDB
import TidemarkCore

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
        // Tables named as SQLite matches them, whatever the case, and registered as their
        // schema spells them: the lineage identifies a version by those names.
        var migration = migration
        migration.untrack = migration.untrack.map { name in
            before.first { TrackedTable.sameName($0.name, name) }?.name ?? name
        }
        migration.track = try migration.track.map { try TrackedTable.spelling(of: $0, in: db) ?? $0 }
        migration.preserve = try migration.preserve.map { argument in
            let parts = argument.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2, let table = try TrackedTable.spelling(of: parts[0], in: db) else { return argument }
            return "\(table).\(parts[1])"
        }
        // Rows written by the migration, tracked or not, captured or not: a write to a column the
        // migration added is not captured, since the triggers do not know the column yet.
        let wroteRows = db.totalChangesCount != changesBefore
        let schemaAfter = try Self.schemaText(db)
        let changedSchema = try db.schemaVersion() != cookieBefore
        let written = try forgetChanges(after: lastChange)
        for name in migration.untrack where !before.contains(where: { $0.name == name && !$0.isInternal }) {
            throw StoreError.notTracked(name)
        }
        let position = try SchemaLineage.position(db) + 1
        var summary = Store.MigrationSummary()
        summary.changedSchema = changedSchema
        summary.wroteRows = wroteRows
        var operations: [Schema.Operation] = []
        var after: [TrackedTable] = []
        let preserve = try preservedByTable(
            migration.preserve, tracked: before.map(\.name) + migration.track, untracked: migration.untrack)
        for old in before {
            if migration.untrack.contains(old.name) {
                operations.append(try untrack(old, at: position, summary: &summary))
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
        // Another client's change (no SQL here) too: it is adopted as a migration, or refused as one.
        try checkDefaultsAreDeterministic(summary.addedColumns)
        try settleRenames(after, before: before)
        for (table, renamed) in summary.renamedColumns {
            try ConflictResolver.renameColumns(renamed, ofTable: table, in: db)
        }
        let newlyTracked = try trackNew(
            migration.track, after: after, registrations: registrations, preserve: preserve, summary: &summary,
            operations: &operations)
        // A trigger the SQL made on a tracked table must fire after capture (`CaptureTriggers.outranked`).
        let outranked = try CaptureTriggers.outranked(in: db)
        for table in after where table.untrackedAt == nil && outranked.contains(table.name.lowercased()) {
            try CaptureTriggers.remake(table, in: db)
        }
        if !operations.isEmpty {
            let version = try SchemaLineage.append(db, Schema.Change(operations))
            // Another client's change is made already: refusing it would leave a store no command
            // opens, so it is adopted, and pulls report the fork.
            if !migration.isAdoption,
                let held = try HeldBundles.versionsAt(version.position, db).first(where: { $0.id != version.id })
            {
                throw StoreError.migrationForks(made: version, held: held)
            }
            summary.version = version
        }
        try store.registrations.reload(db)
        // A change another client made (no SQL here) came with writes to the columns it added.
        let added =
            migration.changesSchema
            ? []
            : after.compactMap { table in
                summary.addedColumns[table.name].map { (table, $0) }
            }
        try adoptRows(of: newlyTracked, values: added)
        return summary
    }

    /// Removes the changes captured after `lastChange`, those the migration's SQL and code wrote,
    /// and returns the ids of the tables they wrote. What the migration wrote is not history: every
    /// replica runs the same migration. Nor is the author mark an app's writer put on it. (Marks
    /// of earlier changes went when they were sealed, before the migration ran.)
    private func forgetChanges(after lastChange: Int64) throws -> Set<Int64> {
        let written = Set(
            try Int64.fetchAll(
                db, sql: "SELECT DISTINCT table_id FROM tidemark_changes WHERE id > ?", arguments: [lastChange]))
        try db.execute(sql: "DELETE FROM tidemark_changes WHERE id > ?", arguments: [lastChange])
        try WriterAuthorship.removeMarks(after: lastChange, in: db)
        return written
    }

    /// Starts tracking each table of `names` that the migration did not carry (`--track`), with
    /// ids after those of `registrations`, and returns them. A table tracked under its name before
    /// (`registrations` keeps those untracked) must have the same key again: a bundle names a table
    /// once, with one key, for every version it spans (Protocol/bundle.md §3.3).
    private func trackNew(
        _ names: [String], after: [TrackedTable], registrations: [TrackedTable], preserve: [String: [String]],
        summary: inout Store.MigrationSummary, operations: inout [Schema.Operation]
    ) throws -> [TrackedTable] {
        var nextID = (registrations.map(\.id).max() ?? 0) + 1
        var tracked: [TrackedTable] = []
        for name in names where !after.contains(where: { $0.name == name }) && !summary.trackedTables.contains(name) {
            let table = try track(
                name, id: nextID, preserving: preserve[name] ?? [],
                untracked: registrations.filter { $0.untrackedAt != nil })
            nextID += 1
            summary.trackedTables.append(name)
            operations.append(.track(table: name, keyColumns: table.keyColumns, columns: table.columns))
            tracked.append(table)
        }
        return tracked
    }

    /// Records the rows the newly tracked `tables` already hold as inserts, in an adoption of
    /// their own (`Sealer.Authorship.adoption`: every replica that makes the migration records
    /// them), and the values rows hold in columns another client added (`values`: written while
    /// the capture triggers did not know them) as updates, in a transaction after it: edits of
    /// this replica's, so that peers receive them.
    private func adoptRows(of tables: [TrackedTable], values: [(TrackedTable, [String])]) throws {
        guard !tables.isEmpty || !values.isEmpty else { return }
        for table in tables { try Store.adoptRows(of: table, in: db) }
        if !tables.isEmpty, try Sealer.hasPending(db) {
            _ = try Sealer.seal(
                db, replica: store.replica.id, clock: store.options.clock,
                as: .adoption(processID: store.options.processID))
        }
        for (table, columns) in values { try Store.adoptValues(of: table, columns: columns, in: db) }
        guard try Sealer.hasPending(db) else { return }
        _ = try Sealer.seal(
            db, replica: store.replica.id, clock: store.options.clock,
            as: .init(author: nil, contextName: "adopt", processID: store.options.processID))
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
        // Its rows and key were written without them: checked as a table to track is. (A change
        // another client made is adopted all the same, never left as a store nothing opens.)
        if migration.changesSchema, triggersGone || lifted.contains(old.id) {
            try TrackedTable.checkKeys(of: table, in: db)
        }
        // A unique index made or dropped changes which rows a REPLACE can displace (`DisplacedRows`).
        let indexesChanged =
            schemas.before[Self.indexesKey(of: old.name)] != schemas.after[Self.indexesKey(of: table.name)]
        if table != old || lifted.contains(old.id) || triggersGone || indexesChanged {
            try Bookkeeping.ensureChangeColumns(db, for: table)
            // The triggers as the SQL left them: those that already read as `table` needs stay.
            try CaptureTriggers.install(table, in: db, current: schemas.after, droppingUnusedScratch: indexesChanged)
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
    /// A table `untracked` names must have the key it had there (`trackNew`), checked before
    /// anything is made.
    private func track(_ name: String, id: Int64, preserving columns: [String], untracked: [TrackedTable] = [])
        throws -> TrackedTable
    {
        let table = try TrackedTable.describe(name, id: id, preserving: columns, in: db)
        if let earlier = untracked.first(where: {
            TrackedTable.sameName($0.name, table.name) && $0.keyColumns != table.keyColumns
        }) {
            let keys = { (columns: [String]) in columns.joined(separator: ", ") }
            throw StoreError.unsupportedMigration(
                table: table.name,
                change:
                    "it was tracked before with the key (\(keys(earlier.keyColumns))), and is now keyed by (\(keys(table.keyColumns))); "
                    + "a table is tracked again with the key it had, or under another name")
        }
        try TrackedTable.checkKeys(of: table, in: db)
        try table.insert(db)
        try Bookkeeping.createRowMetadata(db, for: table)
        try Bookkeeping.ensureChangeColumns(db, for: table)
        try CaptureTriggers.install(table, in: db)
        return table
    }

    /// Every table's and trigger's SQL, by name; and under `indexesKey(of:)`, the SQL of every
    /// index of each table, in the schema's order (an index made anew moves to its end).
    private static func schemaText(_ db: Database) throws -> [String: String] {
        var text: [String: String] = [:]
        for row in try Row.fetchAll(
            db,
            sql:
                "SELECT name, sql, type, tbl_name FROM sqlite_master WHERE type IN ('table', 'trigger', 'index')"
        ) {
            if row[2] as String == "index" {
                text[indexesKey(of: row[3]), default: ""] += "\(row[0] as String): \(row[1] as String? ?? "");"
            } else {
                text[row[0]] = row[1] ?? ""
            }
        }
        return text
    }

    /// Where `schemaText` keeps the indexes of the table `name`: no object's name holds a NUL.
    private static func indexesKey(of name: String) -> String { "\u{0}indexes\u{0}" + name }

    /// Stops tracking `table`: its triggers, row metadata and digest go, its registration stays for
    /// the history written before. Notes it in `summary` and returns its schema operation.
    private func untrack(
        _ table: TrackedTable, at position: Int, summary: inout Store.MigrationSummary
    ) throws -> Schema.Operation {
        try RowDigests.forget(table.id, db)
        try CaptureTriggers.removeAll(table, in: db)
        try db.execute(sql: "DROP TABLE IF EXISTS \(Bookkeeping.rowMetadataTable(table))")
        var untracked = table
        untracked.untrackedAt = position
        try untracked.update(db)
        summary.untrackedTables.append(table.name)
        return .untrack(table: table.name, keyColumns: table.keyColumns, columns: table.columns)
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
