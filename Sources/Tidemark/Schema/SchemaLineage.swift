import Foundation
import GRDB
import TidemarkCore

/// The schema versions this store has made, in order (Protocol/schema.md): the owner of
/// `tidemark_schemas`. A migration that changes what replicates appends one; every transaction
/// records the position of the version it was written under (`tidemark_transactions.schema`).
enum SchemaLineage {
    /// Every version, oldest first; empty while the store has its initial schema.
    static func fetch(_ db: Database) throws -> [Schema.Version] {
        var versions: [Schema.Version] = []
        for row in try Row.fetchAll(db, sql: "SELECT position, id, change FROM tidemark_schemas ORDER BY position") {
            let version = Schema.Version(after: versions.last, change: try Schema.Change(encoded: [UInt8](row[2] as Data)))
            guard version.position == row[0] as Int, version.id == [UInt8](row[1] as Data) else {
                throw StoreError.database(path: "tidemark_schemas", message: "the schema lineage is damaged at position \(row[0] as Int)")
            }
            versions.append(version)
        }
        return versions
    }

    /// The position of the current version (0: the initial schema).
    static func position(_ db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(position), 0) FROM tidemark_schemas")) ?? 0
    }

    /// Makes the version that follows the current one with `change`, and returns it.
    @discardableResult
    static func append(_ db: Database, _ change: Schema.Change) throws -> Schema.Version {
        let version = Schema.Version(after: try fetch(db).last, change: change)
        try db.execute(
            sql: "INSERT INTO tidemark_schemas(position, id, change) VALUES (?, ?, ?)",
            arguments: [version.position, Data(version.id), Data(change.encoded())])
        return version
    }

    /// What a migration changed in what replicates, as a version's change; nil when nothing that
    /// replicates changed (an index, a view, preserved columns).
    static func change(of summary: Store.MigrationSummary, tables: [TrackedTable]) -> Schema.Change? {
        var operations: [Schema.Operation] = []
        for (table, columns) in summary.addedColumns {
            operations += columns.map { Schema.Operation.addColumn(table: table, column: $0) }
        }
        for name in summary.trackedTables {
            guard let table = tables.first(where: { $0.name == name }) else { continue }
            operations.append(.track(table: name, keyColumns: table.keyColumns, columns: table.columns))
        }
        return operations.isEmpty ? nil : Schema.Change(operations)
    }

    /// The tables as they were at `position` of `lineage`: `current` with every later version
    /// undone (a table tracked later is left out, a column added later dropped).
    static func tables(_ current: [BundleHeader.TableSchema], at position: Int, of lineage: [Schema.Version])
        -> [BundleHeader.TableSchema]
    {
        var tables = current
        for version in lineage.dropFirst(position).reversed() {
            for operation in version.change.operations {
                switch operation {
                case .track(let table, _, _):
                    tables.removeAll { $0.name == table }
                case .addColumn(let table, let column):
                    guard let i = tables.firstIndex(where: { $0.name == table }) else { continue }
                    tables[i].columns.removeAll { $0 == column }
                }
            }
        }
        return tables
    }

    /// Whether `tables` already have what `version` adds, so a store that has them can take the
    /// version on without running anything (a store created after the migration, from the new
    /// schema).
    static func isSatisfied(_ version: Schema.Version, by tables: [TrackedTable]) -> Bool {
        version.change.operations.allSatisfy { operation in
            switch operation {
            case .track(let name, let keys, let columns):
                guard let table = tables.first(where: { $0.name == name }) else { return false }
                return table.keyColumns == keys && Set(columns).isSubset(of: table.columns)
            case .addColumn(let name, let column):
                return tables.first { $0.name == name }?.columns.contains(column) ?? false
            }
        }
    }
}
