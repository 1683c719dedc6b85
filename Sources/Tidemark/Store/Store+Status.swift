import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A summary of the store, as `sync status` prints it.
    public struct Status: Sendable {
        /// This replica.
        public var replica: Replica
        /// The current token.
        public var token: History.Token
        /// The tracked tables.
        public var tables: [TrackedTable]
        /// Transactions held in history.
        public var transactionCount: Int
        /// Changes held in history.
        public var changeCount: Int
        /// Changes captured from other clients and not yet sealed into a transaction.
        public var pendingChangeCount: Int
        /// Bytes of history on disk (SQLite pages of the bookkeeping tables), when SQLite can tell.
        public var historyBytes: Int?
        /// The oldest and newest transaction timestamps held, if any.
        public var oldest: HLCTimestamp?
        /// The newest transaction timestamp held, if any.
        public var newest: HLCTimestamp?
        /// The schema versions this store has made, oldest first; the last is the current one.
        /// Empty while it has its initial schema.
        public var lineage: [Schema.Version] = []
        /// The schema versions that held bundles wait for.
        public var waiting: [SchemaWait] = []
        /// The trusted peers whose schema lineage forks from this store's, as pulls found them.
        public var forks: [SchemaFork] = []
        /// Deleted rows whose identity and generation are still kept, until every member has applied
        /// their delete (Protocol/pruning.md §6).
        public var tombstones = 0
        /// Why the store publishes nothing, when a pull found it to be an older copy of itself
        /// (`ExchangeError.restoredFromOlderCopy`, Protocol/exchange.md §4.4): push, pull, export
        /// and prune refuse it with this error. Nil otherwise.
        public var restoredFromOlderCopy: ExchangeError?
    }

    /// Reads the store's status, writing nothing. Does not seal foreign writes; they show as
    /// pending. The tombstones count this replica's deletes not yet folded into row metadata.
    public func status() throws -> Status {
        try mappingErrors {
            try database.read { db in
                let state = try ReplicaState.fetch(db)
                let counts = try Row.fetchOne(
                    db, sql: "SELECT count(*), min(hlc), max(hlc) FROM tidemark_transactions")!
                let changes =
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM tidemark_changes WHERE op <> ? AND id <= ?",
                        arguments: [Bookkeeping.Op.marker.rawValue, state.sealedThrough]) ?? 0
                let pending =
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM tidemark_changes WHERE id > ?", arguments: [state.sealedThrough])
                    ?? 0
                let bytes = try? Int.fetchOne(
                    db, sql: "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'tidemark\\_%' ESCAPE '\\'")
                return Status(
                    replica: replica, token: try Self.currentToken(db), tables: trackedTables,
                    transactionCount: counts[0],
                    changeCount: changes, pendingChangeCount: pending, historyBytes: bytes,
                    oldest: (counts[1] as Int64?).map(HLCTimestamp.init(packed:)),
                    newest: (counts[2] as Int64?).map(HLCTimestamp.init(packed:)),
                    lineage: try SchemaLineage.fetch(db), waiting: try HeldBundles.waits(db),
                    forks: try SchemaForks.all(db),
                    tombstones: try Tombstones.count(db, tables: replicatedTables)
                        + LocalFold(db: db, store: self).tombstonesAdded(),
                    restoredFromOlderCopy: try Self.restoredFromOlderCopy(db))
            }
        }
    }
}
