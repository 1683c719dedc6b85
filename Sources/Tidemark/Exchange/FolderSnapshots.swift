import Foundation
import TidemarkCore

/// The snapshots of one exchange folder that a reader may catch up from: each replica's
/// `snapshot.tms` signed by that replica, this replica's own or a trusted peer's, whose header
/// this replica can read. A reader that cannot follow some replica's bundles catches up from any
/// of them that holds what those bundles assume (Protocol/pruning.md §5.4), so a prune writes a
/// snapshot only when none of them holds what it removes (pruning.md §3.3).
struct FolderSnapshots {
    var headers: [Replica.ID: BundleHeader] = [:]

    init(in exchange: ExchangeFolder, replica: Replica.ID, trusted: Set<Replica.ID>, key: KeyFile) throws {
        for folder in try exchange.replicaFolders(except: replica) + [replica]
        where folder == replica || trusted.contains(folder) {
            let file = ExchangeFolder.File(replica: folder, name: ExchangeFolder.snapshotName)
            guard try exchange.contains(file.name, of: folder),
                let header = (try? exchange.signedHeader(of: file, identity: key.envelopeIdentity)) ?? nil,
                header.kind == .snapshot
            else { continue }
            headers[folder] = header
        }
    }

    /// How far a reader that imports one of them holds `origin`'s transactions: the furthest.
    func position(of origin: Replica.ID) -> Int64 {
        headers.values.map { $0.through[origin] }.max() ?? 0
    }

    /// Whether one of them, written under `lineage`, holds every transaction of `token`.
    func cover(_ token: History.Token, lineage: [Schema.Version]) -> Bool {
        headers.values.contains { header in
            header.through.covers(token) && header.lineage.map(\.id) == lineage.map(\.id)
        }
    }
}

extension Store {
    /// The members whose watermark does not hold this replica's own transactions up to
    /// `needed(member, retired)`, the ones no file of an exchange folder gives that member (its
    /// prunes removed them, they went encrypted before it was trusted, or its history of them was
    /// pruned before they were ever published): they need a snapshot to catch up (a new member,
    /// one back from retirement), and the one that held them may since have been damaged, lost or
    /// rewritten under another schema version (Protocol/pruning.md §3.5). `retired` tells a
    /// retired member, which needs only what is in no file at all.
    func membersLacking(
        ownTransactionsThrough needed: (Replica.ID, _ retired: Bool) -> Int64
    ) throws -> [(id: Replica.ID, retired: Bool)] {
        try mappingErrors {
            try database.read { db in
                let retired = Set(try String.fetchAll(db, sql: "SELECT id FROM tidemark_members WHERE retired = 1"))
                return try Self.peers(db).map { ($0.id, retired.contains($0.id.description)) }.filter { id, retired in
                    try Self.knownToken(of: id, db)[replica.id] < needed(id, retired)
                }
            }
        }
    }

    /// The replicas that can open this replica's snapshot in the exchange folder recorded as
    /// `recorded` when the group encrypts (those it was encrypted for), or nil when it went in clear
    /// or is not known.
    func snapshotReaders(_ recorded: String) throws -> Set<Replica.ID>? {
        try mappingErrors {
            try database.read { db in
                let text = String.fromDatabaseValue(
                    try Bookkeeping.meta(db, Bookkeeping.Meta.snapshotReadersPrefix + recorded))
                return text.map { Set($0.split(separator: ",").compactMap { Replica.ID(hex: String($0)) }) }
            }
        }
    }

    /// Who can open a snapshot written now: every trusted peer when the group encrypts
    /// (Protocol/encryption.md §4), nil (anyone) otherwise.
    func readersOfASnapshot() throws -> [Replica.ID]? {
        try mappingErrors {
            try database.read { db in try Self.encrypts(db) ? try Self.peers(db).map(\.id) : nil }
        }
    }

    /// Records `readers` (`readersOfASnapshot`) as those of this replica's snapshot in the exchange
    /// folder recorded as `recorded`.
    func noteSnapshotReaders(_ readers: [Replica.ID]?, _ recorded: String) throws {
        try mappingErrors {
            try database.write { db in
                try Bookkeeping.setMeta(
                    db, Bookkeeping.Meta.snapshotReadersPrefix + recorded,
                    readers.map { $0.map(\.description).joined(separator: ",") })
            }
        }
    }

    /// The snapshots of `exchange` a reader may catch up from (`FolderSnapshots`).
    func folderSnapshots(in exchange: ExchangeFolder, key: KeyFile) throws -> FolderSnapshots {
        try FolderSnapshots(in: exchange, replica: replica.id, trusted: Set(try peers().map(\.id)), key: key)
    }

    /// The schema versions of this store, oldest first.
    func lineage() throws -> [Schema.Version] {
        try mappingErrors { try database.read { db in try SchemaLineage.fetch(db) } }
    }
}
