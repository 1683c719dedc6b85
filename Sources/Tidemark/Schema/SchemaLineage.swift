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
            let version = Schema.Version(
                after: versions.last, change: try Schema.Change(encoded: [UInt8](row[2] as Data)))
            guard version.position == row[0] as Int, version.id == [UInt8](row[1] as Data) else {
                throw StoreError.database(
                    path: "tidemark_schemas", message: "the schema lineage is damaged at position \(row[0] as Int)")
            }
            versions.append(version)
        }
        return versions
    }

    /// The position of the current version (0: the initial schema).
    static func position(_ db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(position), 0) FROM tidemark_schemas")) ?? 0
    }

    /// Makes the version that follows the current one with `change`, and returns it. The current
    /// version is checked against its parent, as `fetch` checks each one; the lineage is not read
    /// whole.
    @discardableResult
    static func append(_ db: Database, _ change: Schema.Change) throws -> Schema.Version {
        let last = try Row.fetchAll(
            db, sql: "SELECT position, id, change FROM tidemark_schemas ORDER BY position DESC LIMIT 2")
        var parent: Schema.Version?
        if let current = last.first {
            let grandparentID = last.count > 1 ? [UInt8](last[1][1] as Data) : Schema.initialID
            let position: Int = current[0]
            let id = [UInt8](current[1] as Data)
            let recorded = try Schema.Change(encoded: [UInt8](current[2] as Data))
            guard position == (last.count > 1 ? last[1][0] as Int : 0) + 1,
                id == Schema.versionID(parent: grandparentID, change: recorded)
            else {
                throw StoreError.database(
                    path: "tidemark_schemas", message: "the schema lineage is damaged at position \(position)")
            }
            parent = Schema.Version(position: position, id: id, change: recorded)
        }
        let version = Schema.Version(after: parent, change: change)
        try db.execute(
            sql: "INSERT INTO tidemark_schemas(position, id, change) VALUES (?, ?, ?)",
            arguments: [version.position, Data(version.id), Data(change.encoded())])
        return version
    }

    /// Takes `versions` on without a migration, for a store whose tables already have what they
    /// change: records the registrations `SchemaNaming.adopting` made (dropped columns and
    /// untracked tables the versions name, so history written before them can be relayed), then
    /// the versions. Returns the versions as recorded.
    static func adopt(_ db: Database, _ versions: [Schema.Version], registrations: [TrackedTable], store: Store) throws
        -> [Schema.Version]
    {
        let known = Dictionary(uniqueKeysWithValues: store.registrations.all.map { ($0.id, $0) })
        for registration in registrations where registration != known[registration.id] {
            if known[registration.id] == nil { try registration.insert(db) } else { try registration.update(db) }
        }
        let adopted = try versions.map { try append(db, $0.change) }
        try store.registrations.reload(db)
        return adopted
    }
}
