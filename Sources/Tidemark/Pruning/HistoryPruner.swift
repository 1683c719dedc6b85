import Foundation
import GRDB
import TidemarkCore

/// Deletes history prefixes and remembers, per replica, how far history was deleted and the
/// origin's chain hash at that point (so exports can continue the chain after it).
struct HistoryPruner {
    let db: Database
    let store: Store

    /// Deletes transactions covered by `token`; returns how many. Folds local changes into row
    /// metadata first: history is never deleted before merge state has what it needs.
    func delete(through token: History.Token) throws -> Int {
        try LocalFold(db: db, store: store).run()
        let chains = Chains(db: db, store: store)
        _ = try chains.own(through: token[store.replica.id])
        var deleted = 0
        for (replica, bound) in token.sequences {
            let key = Data(replica.bytes)
            guard
                let maxSeq = try Int64.fetchOne(
                    db, sql: "SELECT max_seq FROM tidemark_replicas WHERE replica = ?", arguments: [key])
            else { continue }
            let through = min(bound, maxSeq)
            let pruned =
                try Int64.fetchOne(
                    db, sql: "SELECT pruned_through FROM tidemark_replicas WHERE replica = ?", arguments: [key]) ?? 0
            guard through > pruned else { continue }
            if let chain = try chains.held(replica, after: through) { try chains.setPrunedHead(chain, origin: replica) }
            deleted += try deleteTransactions(of: replica, through: through)
            try db.execute(
                sql: "UPDATE tidemark_replicas SET pruned_through = max(pruned_through, ?) WHERE replica = ?",
                arguments: [through, key])
        }
        try keepChangeIDsIncreasing()
        return deleted
    }

    /// Deletes `origin`'s transactions up to sequence `through`, with their changes; returns how
    /// many transactions. The caller records the new pruned point.
    func deleteTransactions(of origin: Replica.ID, through: Int64) throws -> Int {
        let key = Data(origin.bytes)
        let ranges = try Row.fetchAll(
            db, sql: "SELECT first_change, last_change FROM tidemark_transactions WHERE replica = ? AND seq <= ?",
            arguments: [key, through])
        for range in ranges {
            try db.execute(
                sql: "DELETE FROM tidemark_changes WHERE id BETWEEN ? AND ?", arguments: [range[0], range[1]])
        }
        try db.execute(
            sql: "DELETE FROM tidemark_transactions WHERE replica = ? AND seq <= ?", arguments: [key, through])
        return db.changesCount
    }

    /// Change ids must keep increasing past every sealed id, or a new capture would reuse an id
    /// below `sealed_through` and never be sealed. If pruning removed the highest ids, a marker
    /// row holds the place.
    func keepChangeIDsIncreasing() throws {
        let sealed = try ReplicaState.fetch(db).sealedThrough
        let last = try Int64.fetchOne(db, sql: "SELECT max(id) FROM tidemark_changes") ?? 0
        if last < sealed {
            try db.execute(
                sql: "DELETE FROM tidemark_changes WHERE op = ?", arguments: [Bookkeeping.Op.marker.rawValue])
            try db.execute(
                sql: "INSERT INTO tidemark_changes(id, table_id, op, mask) VALUES (?, 0, ?, 0)",
                arguments: [sealed, Bookkeeping.Op.marker.rawValue])
        }
    }
}
