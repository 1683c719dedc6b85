import Foundation
import GRDB
import TidemarkCore

/// A store restored from an older copy of itself: once a peer's file shows it, the store publishes
/// nothing more (Protocol/exchange.md §4.4). The note is kept in `tidemark_meta`.
extension Store {
    /// Notes `error` when it shows this store to be an older copy of itself (a pull met it).
    func noteIfRestored(_ error: ExchangeError) throws {
        if case .restoredFromOlderCopy(let path, let have, let has) = error {
            try noteRestored(path: path, have: have, bundleHas: has)
        }
    }

    /// Notes that a peer's file showed this store to be an older copy of itself: from then on it
    /// publishes nothing (`checkNotRestored`).
    func noteRestored(path: String, have: Int64, bundleHas: Int64) throws {
        try mappingErrors {
            try database.write { db in
                try Bookkeeping.setMeta(db, Bookkeeping.Meta.restoredFromOlderCopy, "\(have),\(bundleHas),\(path)")
            }
        }
    }

    /// Refuses to publish anything once a pull found this store to be an older copy of itself
    /// (Protocol/exchange.md §4.4): its next transactions would reuse sequence numbers peers hold
    /// with other content.
    func checkNotRestored() throws {
        if let refusal = try mappingErrors({ try database.read(Self.restoredFromOlderCopy) }) { throw refusal }
    }

    /// Why this store publishes nothing, when a pull found it to be an older copy of itself
    /// (`noteRestored`); nil otherwise.
    static func restoredFromOlderCopy(_ db: Database) throws -> ExchangeError? {
        guard let noted = String.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.restoredFromOlderCopy))
        else { return nil }
        let parts = noted.split(separator: ",", maxSplits: 2).map(String.init)
        guard parts.count == 3, let have = Int64(parts[0]), let has = Int64(parts[1]) else { return nil }
        return ExchangeError.restoredFromOlderCopy(path: parts[2], have: have, bundleHas: has)
    }
}

extension Store {
    /// Own bundles in `exchange` numbered past the last this store recorded publishing there are
    /// its own, published by a push stopped before it recorded them (or through another address
    /// of the same folder), or those of this replica's later self, when this store is a restored
    /// older copy that has written since. Reads them: one that holds an own transaction this store
    /// lacks, or holds with another timestamp, notes the store restored and refuses to publish
    /// (Protocol/exchange.md §4.4). Once they check out, they count as recorded. With `dryRun`
    /// (a prune's), it refuses all the same but writes nothing.
    func checkUnrecordedOwnBundles(
        _ existing: [(number: Int, file: ExchangeFolder.File)], in exchange: ExchangeFolder, recorded: String,
        key: KeyFile, dryRun: Bool = false
    ) throws {
        let last = try lastPushedNumber(recorded)
        let unrecorded = existing.filter { $0.number > last }
        guard let newest = unrecorded.last?.number else { return }
        let have = try currentToken()[replica.id]
        let pruned = try prunedToken()[replica.id]
        for bundle in unrecorded {
            var claimed: [(sequence: Int64, timestamp: Int64)] = []
            // A damaged or unreadable one is the tidying's to deal with.
            guard let path = try? exchange.localPath(of: bundle.file),
                (try? Store.inspectBundle(
                    at: path, key: key,
                    transactions: { head, _ in
                        if head.origin == replica.id { claimed.append((head.sequence, head.timestamp.packed)) }
                    })) != nil
            else { continue }
            let ours = try ownTimestamps(claimed.map(\.sequence).filter { $0 > pruned && $0 <= have })
            if let differing = claimed.first(where: { $0.sequence > pruned && ours[$0.sequence] != $0.timestamp }) {
                let address = exchange.address(of: bundle.file)
                let newest = claimed.map(\.sequence).max() ?? differing.sequence
                if !dryRun { try noteRestored(path: address, have: have, bundleHas: newest) }
                throw ExchangeError.restoredFromOlderCopy(path: address, have: have, bundleHas: newest)
            }
        }
        guard !dryRun else { return }
        try mappingErrors {
            try database.write { db in
                try db.execute(
                    sql: "UPDATE tidemark_folders SET last_number = max(last_number, ?) WHERE path = ?",
                    arguments: [newest, recorded])
            }
        }
    }

    /// Whether this store's own transaction `sequence`, if it holds it, was written after
    /// `signedAt`, a peer's clock when it signed a file saying it holds that transaction. A peer's
    /// clock passes every transaction it applies, so it holds another transaction under that
    /// number: one this replica's later self wrote before this store was restored.
    func ownTransaction(_ sequence: Int64, isNewerThan signedAt: HLCTimestamp) throws -> Bool {
        guard sequence > 0 else { return false }
        return try ownTimestamps([sequence])[sequence].map { $0 > signedAt.packed } ?? false
    }

    /// The timestamps (packed) of this replica's own transactions `sequences`, those it holds.
    private func ownTimestamps(_ sequences: [Int64]) throws -> [Int64: Int64] {
        guard let first = sequences.min(), let last = sequences.max() else { return [:] }
        return try mappingErrors {
            try database.read { db in
                var timestamps: [Int64: Int64] = [:]
                for row in try Row.fetchAll(
                    db, sql: "SELECT seq, hlc FROM tidemark_transactions WHERE replica = ? AND seq BETWEEN ? AND ?",
                    arguments: [Data(replica.id.bytes), first, last])
                {
                    timestamps[row[0]] = row[1]
                }
                return timestamps
            }
        }
    }
}
