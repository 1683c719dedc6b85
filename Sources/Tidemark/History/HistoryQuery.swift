import Foundation
import GRDB
import TidemarkCore

/// The history queries that fetching, exporting, folding and chaining share, written once: which
/// tokens history can still serve, which transactions a token does not cover, and the changes of a
/// transaction.
enum HistoryQuery {
    /// Refuses a token that points into deleted history (`historyTokenExpired`: some origin's
    /// transactions after it were pruned), or that is not from this store's group (`foreignToken`):
    /// one that claims transactions of this replica, `own`, that it never made, or whose every
    /// replica is one the store neither holds history of nor trusts — another store's token. A
    /// token that also names replicas unknown here (a peer's, whose own history this store has not
    /// received) is fine: it covers nothing of theirs that this store holds.
    static func checkUsable(_ token: History.Token, own: Replica.ID, _ db: Database) throws {
        var known: Set<Replica.ID> = Set(try Store.peers(db).map(\.id))
        for row in try Row.fetchAll(db, sql: "SELECT replica, max_seq, pruned_through FROM tidemark_replicas") {
            let replica = try row.decode(Replica.ID.self, atIndex: 0)
            let maxSeq: Int64 = row[1]
            let pruned: Int64 = row[2]
            known.insert(replica)
            if replica == own, token[replica] > maxSeq { throw StoreError.foreignToken(token: token.description) }
            if token[replica] < pruned {
                throw StoreError.historyTokenExpired(token: token.description, replica: replica, prunedThrough: pruned)
            }
        }
        // This replica's transactions, when the store holds none of them.
        if token[own] > 0 && !known.contains(own) { throw StoreError.foreignToken(token: token.description) }
        let named = token.sequences.filter { $0.value > 0 }.map(\.key)
        if !named.isEmpty, !named.contains(where: known.contains) {
            throw StoreError.foreignToken(token: token.description)
        }
    }

    /// The condition on `tidemark_transactions` that selects the transactions `token` does not
    /// cover, with its arguments; nil when it covers nothing (every transaction is selected).
    static func notCovered(by token: History.Token) -> (sql: String, arguments: [any DatabaseValueConvertible])? {
        guard !token.sequences.isEmpty else { return nil }
        var arguments: [any DatabaseValueConvertible] = []
        for (id, seq) in token.sequences {
            arguments.append(id)
            arguments.append(seq)
        }
        let cases = token.sequences.map { _ in "WHEN ? THEN seq > ?" }.joined(separator: " ")
        return ("CASE replica \(cases) ELSE 1 END", arguments)
    }

    /// The timestamp of the first transaction of `origin` held here after `sequence`, or nil when
    /// none is. An origin numbers its transactions in the order of their timestamps, so every write
    /// of `origin` stamped earlier is in a transaction at or before `sequence`.
    /// That is the timestamp of the next transaction by sequence, found in the (replica, seq)
    /// index: `min(hlc)` over every later one read them all (an import into a store of 200,000 own
    /// transactions from a peer that held none took 8 times as long as into an empty store).
    static func firstTimestamp(of origin: Replica.ID, after sequence: Int64, _ db: Database) throws -> HLCTimestamp? {
        try Int64.fetchOne(
            db, sql: "SELECT hlc FROM tidemark_transactions WHERE replica = ? AND seq > ? ORDER BY seq LIMIT 1",
            arguments: [Data(origin.bytes), sequence]
        ).map(HLCTimestamp.init(packed:))
    }

    /// The statement that reads the changes of one transaction, in order: its arguments are the
    /// transaction's `first_change` and `last_change`; `columns` is what to select of each.
    static func changesOfTransaction(selecting columns: String) -> String {
        "SELECT \(columns) FROM tidemark_changes WHERE id BETWEEN ? AND ? ORDER BY id"
    }
}
