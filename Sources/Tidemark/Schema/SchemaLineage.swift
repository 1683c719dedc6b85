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
            versions.append(try version(row, after: versions.last))
        }
        return versions
    }

    /// The version `row` (position, id, change) records, checked against `parent`, the one before
    /// it: throws when the lineage is damaged there.
    private static func version(_ row: Row, after parent: Schema.Version?) throws -> Schema.Version {
        let version = Schema.Version(after: parent, change: try Schema.Change(encoded: [UInt8](row[2] as Data)))
        guard version.position == row[0] as Int, version.id == [UInt8](row[1] as Data) else {
            throw StoreError.database(
                path: "tidemark_schemas", message: "the schema lineage is damaged at position \(row[0] as Int)")
        }
        return version
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
        let grandparent = try last.dropFirst().first.map { row in
            Schema.Version(
                position: row[0], id: [UInt8](row[1] as Data),
                change: try Schema.Change(encoded: [UInt8](row[2] as Data)))
        }
        let parent = try last.first.map { try version($0, after: grandparent) }
        let next = Schema.Version(after: parent, change: change)
        try db.execute(
            sql: "INSERT INTO tidemark_schemas(position, id, change) VALUES (?, ?, ?)",
            arguments: [next.position, Data(next.id), Data(change.encoded())])
        return next
    }

    /// Takes `versions` on without a migration, for a store whose tables already have what they
    /// change: records the registrations `SchemaNaming.adopting` made (dropped columns and
    /// untracked tables the versions name, so history written before them can be relayed, with a
    /// place in history for their values), then the versions. Returns the versions as recorded.
    ///
    /// The store's own transactions written under its current version were written to these same
    /// tables, which the versions describe as well: those that never left the store are relabeled
    /// as written under the last of the versions (Protocol/schema.md §5), since the version they
    /// name may lack their columns (a store created from the app's newer schema, writing before
    /// its first pull). Every file that held one of its transactions ended with a transaction
    /// whose chain hash the store then recorded, so those after the last hashed one never left.
    static func adopt(_ db: Database, _ versions: [Schema.Version], registrations: [TrackedTable], store: Store) throws
        -> [Schema.Version]
    {
        let known = Dictionary(uniqueKeysWithValues: store.registrations.all.map { ($0.id, $0) })
        for registration in registrations where registration != known[registration.id] {
            if known[registration.id] == nil { try registration.insert(db) } else { try registration.update(db) }
            try Bookkeeping.ensureChangeColumns(db, for: registration)
        }
        let before = try position(db)
        let adopted = try versions.map { try append(db, $0.change) }
        if let last = adopted.last {
            let own = Data(store.replica.id.bytes)
            try db.execute(
                sql: """
                    UPDATE tidemark_transactions SET schema = ?
                    WHERE replica = ? AND schema = ? AND seq > (
                        SELECT max(coalesce(max(t.seq), 0), coalesce(max(r.pruned_through), 0))
                        FROM tidemark_replicas AS r LEFT JOIN tidemark_transactions AS t
                          ON t.replica = r.replica AND t.chain IS NOT NULL
                        WHERE r.replica = ?)
                    """,
                arguments: [last.position, own, before, own])
        }
        try store.registrations.reload(db)
        return adopted
    }
}
