import GRDB
import TidemarkCore

/// This replica's counters, the one row of `tidemark_state`, and its only reader and writer:
/// the last timestamp it issued, the last sequence number it assigned, how far captured changes are sealed into
/// transactions, and how far its own transactions are folded into row metadata.
struct ReplicaState {
    /// The last hybrid-logical-clock reading it sealed or merged under (column `clock`, the state
    /// of this replica's hybrid logical clock).
    var lastTimestamp: HLCTimestamp
    /// The last sequence number it assigned to a transaction of its own.
    var sequence: Int64
    /// The last change id that belongs to a transaction.
    var sealedThrough: Int64
    /// The last own transaction folded into row metadata (Protocol/merge.md §3).
    var foldedSequence: Int64

    static func fetch(_ db: Database) throws -> ReplicaState {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT clock, sequence, sealed_through, folded_seq FROM tidemark_state WHERE id = 1"))!
        return ReplicaState(
            lastTimestamp: HLCTimestamp(packed: row[0]), sequence: row[1], sealedThrough: row[2], foldedSequence: row[3]
        )
    }

    /// Records a transaction just sealed: its timestamp and sequence number, and its last change.
    static func sealed(timestamp: HLCTimestamp, sequence: Int64, through lastChange: Int64, _ db: Database) throws {
        try db.cachedStatement(
            sql: "UPDATE tidemark_state SET clock = ?, sequence = ?, sealed_through = ? WHERE id = 1"
        )
        .execute(arguments: [timestamp.packed, sequence, lastChange])
    }

    /// Moves the last timestamp to `timestamp` if it is later (after merging transactions stamped
    /// up to it), so that the next one sealed orders after it.
    static func advance(to timestamp: HLCTimestamp, _ db: Database) throws {
        try db.execute(
            sql: "UPDATE tidemark_state SET clock = max(clock, ?) WHERE id = 1", arguments: [timestamp.packed])
    }

    /// Marks every change up to `lastChange` as belonging to a transaction (imported changes do).
    static func setSealedThrough(_ lastChange: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE tidemark_state SET sealed_through = ? WHERE id = 1", arguments: [lastChange])
    }

    /// Records that own transactions up to `sequence` are folded into row metadata.
    static func setFolded(through sequence: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE tidemark_state SET folded_seq = ? WHERE id = 1", arguments: [sequence])
    }
}
