import GRDB

// MARK: - tidemark_meta: the store's keyed facts

extension Bookkeeping {
    /// Meta keys.
    enum Meta {
        static let format = "format"
        static let replicaName = "replica_name"
        static let publicKey = "public_key"
        /// SQLite's schema cookie when the row digests were last known to be trustworthy.
        static let digestSchemaVersion = "digest_schema_version"
        /// Which row hash the kept row hashes and digests follow (`RowDigests.hashRule`); absent in
        /// stores whose digests earlier builds kept.
        static let rowHashRule = "row_hash_rule"
        /// Set once an import showed this store to be an older copy of itself: `have,has,path`
        /// (`ExchangeError.restoredFromOlderCopy`). It then publishes nothing more.
        static let restoredFromOlderCopy = "restored_from_older_copy"
        /// Followed by an exchange folder's recorded location: the replica ids this replica's
        /// snapshot there was encrypted for, comma-separated; NULL when it went in clear.
        static let snapshotReadersPrefix = "snapshot_readers "
        /// Followed by an exchange folder's recorded location: for each replica this replica's
        /// bundles there are encrypted for, `id:position`, comma-separated: the reader can open the
        /// bundles that follow this replica's own transaction `position`, not those before (it was
        /// trusted after them). Absent while the bundles go in clear.
        static let bundleReadersPrefix = "bundle_readers "
        /// The trusted peer whose encrypted file this replica found before it learned the group's
        /// encryption setting (`Store.encryptsBeforeLearningTheSetting`).
        static let encryptedPeerFile = "encrypted_peer_file"
        /// Followed by a trusted peer's replica id: the schema version its files were written under
        /// where its lineage forks from this store's (`SchemaForks`).
        static let schemaForkPrefix = "schema_fork "
        /// What the setup that created the store asked to track (`Store.setupFingerprint`); absent
        /// in stores made by earlier builds.
        static let setup = "setup"
    }

    static func meta(_ db: Database, _ key: String) throws -> DatabaseValue {
        try DatabaseValue.fetchOne(db, sql: "SELECT value FROM tidemark_meta WHERE key = ?", arguments: [key]) ?? .null
    }

    static func setMeta(_ db: Database, _ key: String, _ value: (any DatabaseValueConvertible)?) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO tidemark_meta(key, value) VALUES (?, ?)", arguments: [key, value])
    }
}
