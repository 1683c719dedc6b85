import Foundation
import GRDB
import TidemarkCore

/// What this store knows of every origin's hash chain (Protocol/bundle.md §5.2), and the one
/// place that records it: each transaction's chain hash, each origin's latest attested head, and
/// the hash where an origin's history was pruned. Imported transactions arrive with their chain
/// hash; this replica's own are hashed lazily, when an export or a prune first needs them.
struct Chains {
    let db: Database
    let store: Store

    private var replica: Replica.ID { store.replica.id }

    // MARK: - Reading

    /// The chain hash after transaction `sequence` of `origin` as this store holds it: the genesis
    /// hash for 0, the transaction's stored hash, the hash kept where history was pruned, or the
    /// origin's latest attested head. Nil when the store has none of these for that point.
    func held(_ origin: Replica.ID, after sequence: Int64) throws -> [UInt8]? {
        if sequence == 0 { return Chain.genesis(origin) }
        let key = Data(origin.bytes)
        if let chain = try Data.fetchOne(
            db, sql: "SELECT chain FROM tidemark_transactions WHERE replica = ? AND seq = ?",
            arguments: [key, sequence])
        {
            return [UInt8](chain)
        }
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT pruned_through, pruned_head, max_seq, head FROM tidemark_replicas WHERE replica = ?",
                arguments: [key])
        else { return nil }
        if row[0] == sequence, let pruned = row[1] as Data? { return [UInt8](pruned) }
        if row[2] == sequence, let head = row[3] as Data? { return [UInt8](head) }
        return nil
    }

    /// The chain hash after this replica's own transaction `sequence` (genesis for 0), computing
    /// and storing any missing hashes up to it. Returns nil if that point was pruned without its hash.
    func own(through sequence: Int64) throws -> [UInt8]? {
        if let held = try held(replica, after: sequence) { return held }
        let key = Data(replica.bytes)
        let info = try Row.fetchOne(
            db, sql: "SELECT pruned_through, pruned_head FROM tidemark_replicas WHERE replica = ?", arguments: [key])
        let prunedThrough: Int64 = info?[0] ?? 0
        if sequence <= prunedThrough { return nil }
        // Start from the latest known point at or below `sequence`.
        var base: Int64 = 0
        var head = Chain.genesis(replica)
        if let row = try Row.fetchOne(
            db,
            sql:
                "SELECT seq, chain FROM tidemark_transactions WHERE replica = ? AND seq < ? AND chain IS NOT NULL ORDER BY seq DESC LIMIT 1",
            arguments: [key, sequence])
        {
            base = row[0]
            head = [UInt8](row[1] as Data)
        } else if prunedThrough > 0 {
            guard let pruned = info?[1] as Data? else { return nil }
            base = prunedThrough
            head = [UInt8](pruned)
        }
        let decoder = try ChangeDecoder(db, store: store, inNameOrder: true)
        let changes = try RawStatement(db, sql: HistoryQuery.changesOfTransaction(selecting: decoder.selectList))
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT seq, hlc, author, context, pid, first_change, last_change, schema FROM tidemark_transactions
                WHERE replica = ? AND seq > ? AND seq <= ? ORDER BY seq
                """,
            arguments: [key, base, sequence])
        let versions = rows.isEmpty ? [] : try SchemaLineage.fetch(db)
        for row in rows {
            let position: Int = row[7]
            var list: [History.Change] = []
            changes.reset()
            try changes.bind(row[5] as Int64, at: 1)
            try changes.bind(row[6] as Int64, at: 2)
            while try changes.step() {
                guard let change = decoder.decode(changes, position: position, whole: true) else {
                    throw ExchangeError.unnamedHistory(origin: store.replica.name, sequence: row[0], position: position)
                }
                list.append(change)
            }
            var hasher = ChainHasher(
                previous: head, origin: replica, sequence: row[0], timestamp: HLCTimestamp(packed: row[1]),
                author: row[2],
                contextName: row[3], processID: row[4], changeCount: list.count,
                schema: position == 0 ? nil : versions[position - 1].id)
            for change in list { hasher.add(change) }
            head = hasher.finish()
            try recordTransactionHash(head, origin: replica, sequence: row[0])
        }
        return head
    }

    /// The chain hash after `origin`'s transaction `sequence`: this replica's own computed as
    /// needed, another origin's as held.
    func hash(of origin: Replica.ID, after sequence: Int64) throws -> [UInt8]? {
        origin == replica ? try own(through: sequence) : try held(origin, after: sequence)
    }

    // MARK: - Recording

    /// Records the chain hash after `origin`'s transaction `sequence`.
    func recordTransactionHash(_ head: [UInt8], origin: Replica.ID, sequence: Int64) throws {
        try db.execute(
            sql: "UPDATE tidemark_transactions SET chain = ? WHERE replica = ? AND seq = ?",
            arguments: [Data(head), origin, sequence])
    }

    /// Records this replica's attestation of its own chain after `sequence`, the head its next
    /// exports pass on, if `sequence` is still its latest transaction.
    func recordOwnAttestation(_ attestation: Attestation, sequence: Int64) throws {
        try recordTransactionHash(attestation.head, origin: replica, sequence: sequence)
        try db.execute(
            sql: "UPDATE tidemark_replicas SET head = ?, head_signature = ? WHERE replica = ? AND max_seq = ?",
            arguments: [Data(attestation.head), Data(attestation.signature), replica, sequence])
    }

    /// Records what an import brought of `origin`: its transactions through `last`, its key, and
    /// its attested head there.
    func recordAttestedHead(
        origin: Replica.ID, last: Int64, publicKey: [UInt8], attestation: Attestation
    ) throws {
        try db.execute(
            sql: """
                INSERT INTO tidemark_replicas(replica, max_seq, public_key, head, head_signature) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(replica) DO UPDATE SET max_seq = excluded.max_seq, public_key = excluded.public_key,
                    head = excluded.head, head_signature = excluded.head_signature
                """,
            arguments: [origin, last, Data(publicKey), Data(attestation.head), Data(attestation.signature)])
    }

    /// Records the chain hash after `origin`'s transaction `prunedThrough`, where this store's
    /// history of it begins, unless it is known already (after a snapshot it is not).
    func learnPrunedHead(_ head: [UInt8], origin: Replica.ID, prunedThrough: Int64) throws {
        try db.execute(
            sql: """
                UPDATE tidemark_replicas SET pruned_head = ?
                WHERE replica = ? AND pruned_through = ? AND pruned_head IS NULL
                """,
            arguments: [Data(head), origin, prunedThrough])
    }

    /// Records the chain hash where `origin`'s history is about to be pruned.
    func setPrunedHead(_ head: [UInt8], origin: Replica.ID) throws {
        try db.execute(
            sql: "UPDATE tidemark_replicas SET pruned_head = ? WHERE replica = ?", arguments: [Data(head), origin])
    }

    /// Forgets every chain hash held of `origin` beyond its transactions' own: after a snapshot,
    /// what the store knew no longer continues to where it now is.
    func forgetHeads(of origin: Replica.ID) throws {
        try db.execute(
            sql:
                "UPDATE tidemark_replicas SET head = NULL, head_signature = NULL, pruned_head = NULL WHERE replica = ?",
            arguments: [origin])
    }
}
