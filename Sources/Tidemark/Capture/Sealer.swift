import GRDB
import TidemarkCore

/// Seals pending captured changes into a transaction: assigns the next sequence number and a
/// hybrid-logical-clock timestamp, and records author, context name and process id.
///
/// Changes are pending from the moment a trigger records them until a seal; a transaction owns the
/// contiguous range of change ids sealed with it. Runs inside the caller's write transaction.
enum Sealer {
    /// A sealed transaction's header.
    struct Sealed: Sendable, Hashable {
        var sequence: Int64
        var timestamp: HLCTimestamp
        var changeCount: Int64
    }

    /// The bookkeeping state row.
    struct State {
        var clock: HLCTimestamp
        var sequence: Int64
        var sealedThrough: Int64

        static func fetch(_ db: Database) throws -> State {
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT clock, sequence, sealed_through FROM tidemark_state WHERE id = 1"))!
            return State(clock: HLCTimestamp(packed: row[0]), sequence: row[1], sealedThrough: row[2])
        }
    }

    /// The id of the last captured change, sealed or not.
    static func lastChangeID(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(id) FROM tidemark_changes")) ?? 0
    }

    /// Whether changes are waiting to be sealed (cheap; safe in a read transaction).
    static func hasPending(_ db: Database) throws -> Bool {
        try lastChangeID(db) > State.fetch(db).sealedThrough
    }

    /// Seals every pending change into one transaction of `replica`; returns nil when none is pending.
    static func seal(
        _ db: Database, replica: Replica.ID, clock: any WallClock, author: String?, contextName: String?, processID: Int32?
    ) throws -> Sealed? {
        let state = try State.fetch(db)
        let last = try lastChangeID(db)
        guard last > state.sealedThrough else { return nil }
        let timestamp = HLCTimestamp.next(after: state.clock, now: clock.nowMilliseconds())
        let sequence = state.sequence + 1
        // These run on every write through the API: prepared once per connection.
        try db.cachedStatement(
            sql: """
                INSERT INTO tidemark_transactions(replica, seq, hlc, author, context, pid, first_change, last_change)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [Data(replica.bytes), sequence, timestamp.packed, author, contextName, processID, state.sealedThrough + 1, last])
        try db.cachedStatement(sql: "UPDATE tidemark_state SET clock = ?, sequence = ?, sealed_through = ? WHERE id = 1")
            .execute(arguments: [timestamp.packed, sequence, last])
        try db.cachedStatement(
            sql: """
                INSERT INTO tidemark_replicas(replica, max_seq) VALUES (?, ?)
                ON CONFLICT(replica) DO UPDATE SET max_seq = excluded.max_seq
                """
        ).execute(arguments: [Data(replica.bytes), sequence])
        return Sealed(sequence: sequence, timestamp: timestamp, changeCount: last - state.sealedThrough)
    }
}

import Foundation
