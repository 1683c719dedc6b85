import Foundation
import GRDB
import TidemarkCore

/// This replica's own hash chain (Protocol §5.2). Imported transactions arrive with their chain
/// hash; our own are hashed lazily, when an export or a prune first needs them.
struct OwnChain {
    let db: Database
    let store: Store

    private var replica: Replica.ID { store.replica.id }

    /// The chain hash after our transaction `sequence` (genesis for 0), computing and storing any
    /// missing hashes up to it. Returns nil if that point was pruned without its hash.
    func hash(through sequence: Int64) throws -> [UInt8]? {
        if let held = try HeldChain.hash(db, origin: replica, after: sequence) { return held }
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
        let decoder = try ChangeDecoder(db, store: store)
        let changes = try db.makeStatement(
            sql: HistoryQuery.changesOfTransaction(selecting: decoder.selectList))
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
            let list = try Row.fetchAll(changes, arguments: [row[5], row[6]]).compactMap {
                decoder.decode($0, position: position)
            }
            var hasher = ChainHasher(
                previous: head, origin: replica, sequence: row[0], timestamp: HLCTimestamp(packed: row[1]),
                author: row[2],
                contextName: row[3], processID: row[4], changeCount: list.count,
                schema: position == 0 ? nil : versions[position - 1].id)
            for change in list { hasher.add(change) }
            head = hasher.finish()
            try db.execute(
                sql: "UPDATE tidemark_transactions SET chain = ? WHERE replica = ? AND seq = ?",
                arguments: [Data(head), key, row[0]])
        }
        return head
    }
}
