import Foundation
import GRDB
import TidemarkCore

/// What this store knows of an origin's hash chain (Protocol/bundle.md §5.2).
enum HeldChain {
    /// The chain hash after transaction `sequence` of `origin` as this store holds it: the genesis
    /// hash for 0, the transaction's stored hash, the hash kept where history was pruned, or the
    /// origin's latest attested head. Nil when the store has none of these for that point.
    static func hash(_ db: Database, origin: Replica.ID, after sequence: Int64) throws -> [UInt8]? {
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
}
