import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A schema version this store lacks and bundles need: changes written under it are held,
    /// verified and unapplied, until the store makes the same migration.
    public struct SchemaWait: Sendable, Hashable {
        /// The version the held bundles need (the newest, when they need several).
        public var version: Schema.Version
        /// How many held bundles need it.
        public var bundleCount: Int
        /// Whether the store has made the version since: the next pull applies the bundles.
        public var isMade: Bool = false
        /// Whether the store has since made another version at its position (a fork, Protocol/
        /// schema.md §5): the bundles will never apply here.
        public var isForked: Bool = false
        /// How many versions before it the store has not made either: the migrations to make
        /// first, oldest first.
        public var missingBefore: Int = 0
    }

    /// The schema versions held bundles wait for, oldest first.
    public func schemaWaits() throws -> [SchemaWait] {
        try mappingErrors { try database.read { db in try HeldBundles.waits(db) } }
    }
}

/// Bundles written under a schema version this store has not made yet (Protocol/exchange.md
/// §4.2): kept whole in the store, so nothing is lost if the folder is pruned meanwhile, and
/// applied by the first pull after the migration. The owner of `tidemark_held`.
enum HeldBundles {
    /// Keeps a verified bundle until the store has `version`. Holding the same bundle again
    /// changes nothing.
    /// `encrypted`: the bundle came in an encrypted file, so applying it later is no downgrade.
    static func hold(
        _ db: Database, digest: [UInt8], bytes: [UInt8], version: Schema.Version, sender: String, encrypted: Bool
    ) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO tidemark_held(digest, position, waiting_for, change, sender, bundle, encrypted)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                Data(digest), version.position, Data(version.id), Data(version.change.encoded()), sender, Data(bytes),
                encrypted,
            ])
    }

    /// Forgets a held bundle once it is applied (or found already applied).
    static func release(_ db: Database, digest: [UInt8]) throws {
        try db.execute(sql: "DELETE FROM tidemark_held WHERE digest = ?", arguments: [Data(digest)])
    }

    /// The held bundles, with the position and id of the version each needs.
    static func all(_ db: Database) throws -> [(
        digest: [UInt8], position: Int, id: [UInt8], bytes: [UInt8], encrypted: Bool
    )] {
        try Row.fetchAll(
            db,
            sql:
                "SELECT digest, position, waiting_for, bundle, encrypted FROM tidemark_held ORDER BY position, sender, digest"
        ).map {
            ([UInt8]($0[0] as Data), $0[1], [UInt8]($0[2] as Data), [UInt8]($0[3] as Data), $0[4])
        }
    }

    /// The held bundles the store can apply now: it has made the version each needs, and not
    /// another in its place (a fork, which only `waits` reports).
    static func applicable(_ db: Database) throws -> [(
        digest: [UInt8], position: Int, id: [UInt8], bytes: [UInt8], encrypted: Bool
    )] {
        let lineage = try SchemaLineage.fetch(db)
        return try all(db).filter { isMade(position: $0.position, id: $0.id, in: lineage) }
    }

    /// Whether `lineage` has the version of `position` and `id`.
    private static func isMade(position: Int, id: [UInt8], in lineage: [Schema.Version]) -> Bool {
        position <= lineage.count && lineage[position - 1].id == id
    }

    /// The versions at `position` of the lineages the held bundles were written under, where
    /// they reach that far.
    static func versionsAt(_ position: Int, _ db: Database) throws -> [Schema.Version] {
        var versions: [Schema.Version] = []
        for bundle in try all(db) where bundle.position >= position {
            guard let lineage = try? BundleDecoder(BufferSource(bundle.bytes)).header.lineage,
                lineage.count >= position
            else { continue }
            versions.append(lineage[position - 1])
        }
        return versions
    }

    /// What the store will hold once every held bundle applies: `token` merged with each held
    /// bundle's `through`.
    static func reach(from token: History.Token, _ db: Database) throws -> History.Token {
        var reach = token
        for bundle in try all(db) {
            guard let header = try? BundleDecoder(BufferSource(bundle.bytes)).header else { continue }
            reach = reach.merged(with: header.through)
        }
        return reach
    }

    /// What the held bundles wait for, one entry per version.
    static func waits(_ db: Database) throws -> [Store.SchemaWait] {
        var waits: [Store.SchemaWait] = []
        // A fork is refused, never held; but the store may make another version at a held one's
        // position after holding it.
        let lineage = try SchemaLineage.fetch(db)
        let position = lineage.count
        for row in try Row.fetchAll(
            db,
            sql:
                "SELECT position, waiting_for, change, count(*) FROM tidemark_held GROUP BY waiting_for ORDER BY position"
        ) {
            let change = try Schema.Change(encoded: [UInt8](row[2] as Data))
            let version = Schema.Version(position: row[0], id: [UInt8](row[1] as Data), change: change)
            let made = isMade(position: version.position, id: version.id, in: lineage)
            waits.append(
                Store.SchemaWait(
                    version: version, bundleCount: row[3], isMade: made,
                    isForked: version.position <= position && !made,
                    missingBefore: max(0, version.position - 1 - position)))
        }
        return waits
    }
}
