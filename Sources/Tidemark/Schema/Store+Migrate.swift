import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A schema change: SQL the app provides, and the tracking changes that go with it.
    public struct Migration: Sendable {
        /// The SQL to run (statements of any kind but transaction control), or nil.
        public var sql: String?
        /// Tables to start tracking (created by `sql` or already there); their rows are recorded
        /// as inserts, so peers receive them.
        public var track: [String]
        /// `TABLE.COLUMN` pairs: for each table named, exactly these columns are kept in tombstones.
        public var preserve: [String]

        /// Creates a migration.
        public init(sql: String? = nil, track: [String] = [], preserve: [String] = []) {
            self.sql = sql
            self.track = track
            self.preserve = preserve
        }
    }

    /// What a migration changed in tracking.
    public struct MigrationSummary: Sendable, Hashable {
        /// Per tracked table, the columns it gained.
        public var addedColumns: [String: [String]]
        /// Tables tracked from now on.
        public var trackedTables: [String]
        /// Tables whose preserved columns changed.
        public var preserveChanged: [String]
        /// The schema version the migration made, when it changed what replicates (added columns,
        /// tracked tables); nil otherwise. Peers that receive changes written under it hold them
        /// until they have made the same migration.
        public var version: Schema.Version?
        /// Whether tracking changed at all (false for an index, a view, or an untracked table).
        public var changedTracking: Bool { !addedColumns.isEmpty || !trackedTables.isEmpty || !preserveChanged.isEmpty }
    }

    /// Runs a migration and adapts tracking in the same SQLite transaction: a failure, or a change
    /// tracking cannot follow, leaves the store exactly as it was.
    ///
    /// Supported: new tracked tables, columns added to tracked tables (nullable or with a DEFAULT),
    /// changed preserved columns, and any change that leaves tracked tables' columns as they are
    /// (indexes, views, triggers, untracked tables). Refused with `StoreError.unsupportedMigration`:
    /// changing or dropping a primary-key column, and dropping or renaming a tracked table or column.
    /// Existing history and row metadata are not rewritten.
    ///
    /// Peers that have not migrated refuse bundles that carry the new columns, and apply them once
    /// they migrate too; this replica applies their bundles meanwhile.
    @discardableResult
    public func migrate(_ migration: Migration) throws -> MigrationSummary {
        try mappingErrors {
            try database.writeWithoutTransaction { db in
                var summary: MigrationSummary!
                try db.inTransaction(.immediate) {
                    summary = try SchemaMigrator(db: db, store: self).run(migration)
                    return .commit
                }
                try registrations.refresh(db)
                return summary
            }
        }
    }
}

/// Runs one migration inside the caller's write transaction.
struct SchemaMigrator {
    let db: Database
    let store: Store

    func run(_ migration: Store.Migration) throws -> Store.MigrationSummary {
        _ = try store.sealForeign(db)
        try LocalFold(db: db, store: store).run()
        let before = try TrackedTable.fetchAll(db)
        let lastChange = try Sealer.lastChangeID(db)
        var lifted = false
        do {
            try db.inSavepoint {
                try runSQL(migration.sql)
                return .commit
            }
        } catch {
            // The triggers name every column, and SQLite refuses to drop what they name: run the SQL
            // again without them, so that what it does is judged below, or its own error reported.
            for table in before { try CaptureTriggers.remove(table, in: db) }
            lifted = true
            try runSQL(migration.sql)
        }
        // What the SQL itself wrote is not history: every replica runs the same migration.
        try db.execute(sql: "DELETE FROM tidemark_changes WHERE id > ?", arguments: [lastChange])
        var after: [TrackedTable] = []
        var summary = Store.MigrationSummary(addedColumns: [:], trackedTables: [], preserveChanged: [], version: nil)
        let preserve = try preservedByTable(migration.preserve, tracked: before.map(\.name) + migration.track)
        for old in before {
            var table = try followed(old)
            if let columns = preserve[table.name] {
                let described = try TrackedTable.describe(table.name, id: table.id, preserving: columns, in: db, allowReserved: table.isInternal)
                if described.preservedIndexes != table.preservedIndexes { summary.preserveChanged.append(table.name) }
                table.preservedIndexes = described.preservedIndexes
            }
            if table.columns.count > old.columns.count {
                summary.addedColumns[table.name] = Array(table.columns[old.columns.count...])
                try addRowMetadataColumns(old: old, new: &table)
            }
            if table != old {
                try table.update(db)
                if !lifted { try CaptureTriggers.remove(old, in: db) }
            }
            if table != old || lifted {
                try Bookkeeping.ensureValueColumns(db, count: table.columns.count)
                try CaptureTriggers.install(table, in: db)
            }
            after.append(table)
        }
        var nextID = (before.map(\.id).max() ?? 0) + 1
        for name in migration.track where !before.contains(where: { $0.name == name }) && !summary.trackedTables.contains(name) {
            let table = try TrackedTable.describe(name, id: nextID, preserving: preserve[name] ?? [], in: db)
            nextID += 1
            try table.insert(db)
            try Bookkeeping.createRowMetadata(db, for: table)
            try Bookkeeping.ensureValueColumns(db, count: table.columns.count)
            try CaptureTriggers.install(table, in: db)
            after.append(table)
            summary.trackedTables.append(name)
        }
        if let change = SchemaLineage.change(of: summary, tables: after) {
            summary.version = try SchemaLineage.append(db, change)
        }
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

    /// Runs the migration's SQL, naming the statement that failed.
    private func runSQL(_ sql: String?) throws {
        guard let sql else { return }
        let statements = try db.allStatements(sql: sql)
        while let statement = try statements.next() {
            if statement.isTransactionControl { throw StoreError.transactionControlNotAllowed(statement: statement.sql) }
            do {
                try statement.execute()
            } catch let error as DatabaseError {
                throw StoreError.migrationFailed(statement: statement.sql, message: error.message ?? "\(error.resultCode)")
            }
        }
    }

    /// The registration of `old` after the SQL ran, or a refusal naming what tracking cannot follow.
    private func followed(_ old: TrackedTable) throws -> TrackedTable {
        guard try db.tableExists(old.name) else {
            throw StoreError.unsupportedMigration(
                table: old.name, change: "it was dropped or renamed; dropping, renaming or untracking a tracked table is not supported")
        }
        let shape = try TrackedTable.shape(of: old.name, in: db)
        if shape.keyColumns != old.keyColumns {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change: "its primary key changed from (\(old.keyColumns.joined(separator: ", "))) to (\(shape.keyColumns.joined(separator: ", "))); "
                    + "the key is each row's identity on every replica")
        }
        let missing = old.columns.filter { !shape.columns.contains($0) }
        guard missing.isEmpty, Array(shape.columns.prefix(old.columns.count)) == old.columns else {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change: "column \(missing.map { "'\($0)'" }.joined(separator: ", ")) was dropped or renamed; only added columns are supported")
        }
        var table = old
        table.columns = shape.columns
        return table
    }

    /// Adds row-metadata clock columns for the columns `new` gained. Rows saved before keep a shared
    /// clock that covers only the columns they had (`w`, or the registration's width); nothing is
    /// rewritten.
    private func addRowMetadataColumns(old: TrackedTable, new table: inout TrackedTable) throws {
        try Bookkeeping.addSharedClockWidth(db)
        let name = Bookkeeping.rowMetadataTable(table)
        if table.sharedClockWidth == nil {
            table.sharedClockWidth = old.columns.count
            try db.execute(sql: "ALTER TABLE \(name) ADD COLUMN w INTEGER")
        }
        for i in old.columns.count..<table.columns.count {
            try db.execute(sql: "ALTER TABLE \(name) ADD COLUMN t\(i) INTEGER")
            try db.execute(sql: "ALTER TABLE \(name) ADD COLUMN o\(i) INTEGER")
        }
    }

    /// The `preserve` arguments grouped by table, checked against the tables tracked after.
    private func preservedByTable(_ arguments: [String], tracked: [String]) throws -> [String: [String]] {
        var preserve: [String: [String]] = [:]
        for argument in arguments {
            let parts = argument.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw StoreError.invalidPreserve(argument, reason: "expected TABLE.COLUMN")
            }
            guard tracked.contains(parts[0]) else { throw StoreError.invalidPreserve(argument, reason: "table '\(parts[0])' is not tracked") }
            preserve[parts[0], default: []].append(parts[1])
        }
        return preserve
    }
}
