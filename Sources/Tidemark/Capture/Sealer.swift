import Foundation
import GRDB
import TidemarkCore

/// Seals pending captured changes into transactions: assigns the next sequence number and a
/// hybrid-logical-clock timestamp, and records author, context name, process id and the schema
/// version they were written under (the current one: a migration seals what is pending first).
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

    /// Who made a run of changes: the author, context name and process id its transaction records.
    struct Authorship: Sendable, Hashable {
        var author: String?
        var contextName: String?
        var processID: Int32?

        /// Changes no one claimed: writes of another SQLite client.
        static let external = Authorship(author: nil, contextName: nil, processID: nil)

        /// The rows a table held when it started being tracked (`init`, `migrate --track`),
        /// recorded as inserts whose writes order below every other (Protocol/merge.md §1.4): every
        /// replica that tracks the table records them, at its own time, and none of those records
        /// may undo an edit another replica made meanwhile.
        static func adoption(processID: Int32?) -> Authorship {
            Authorship(author: adoptionAuthor, contextName: adoptionContext, processID: processID)
        }
        static let adoptionAuthor = "tidemark"
        static let adoptionContext = "adopt"

        /// Whether a transaction of this author and context name is an adoption.
        static func isAdoption(author: String?, contextName: String?) -> Bool {
            author == adoptionAuthor && contextName == adoptionContext
        }

        /// The clock of the writes of a transaction stamped `timestamp` by `origin` with this
        /// author and context name: an adoption's, or the transaction's own (merge.md §1.4).
        static func clock(
            author: String?, contextName: String?, timestamp: HLCTimestamp, origin: Replica.ID
        ) -> MergeClock {
            isAdoption(author: author, contextName: contextName)
                ? .adoption(timestamp: timestamp, origin: origin) : MergeClock(timestamp: timestamp, origin: origin)
        }

        /// Throws `StoreError.invalidAuthorship` for an author or context name that a bundle cannot
        /// carry (bundle.md §4.1: 1 to `BundleFormat.maxNameLength` bytes): every peer would refuse
        /// the transaction, and every later one of this replica with it.
        func check() throws {
            for (field, value) in [("author", author), ("context name", contextName)] {
                guard let value else { continue }
                if value.isEmpty {
                    throw StoreError.invalidAuthorship(field: field, value: value, reason: "a name cannot be empty")
                }
                if Self.isAdoption(author: author, contextName: contextName), field == "context name" {
                    throw StoreError.invalidAuthorship(
                        field: field, value: value,
                        reason:
                            "author '\(Self.adoptionAuthor)' with context name '\(value)' marks the rows Tidemark adopts"
                    )
                }
                let bytes = value.utf8.count
                if bytes > BundleFormat.maxNameLength {
                    throw StoreError.invalidAuthorship(
                        field: field, value: value,
                        reason: "it is \(bytes) bytes, and a name is at most \(BundleFormat.maxNameLength)")
                }
            }
        }
    }

    /// The bookkeeping state row.
    /// The id of the last captured change, sealed or not.
    static func lastChangeID(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(id) FROM tidemark_changes")) ?? 0
    }

    /// Whether changes are waiting to be sealed (cheap; safe in a read transaction).
    static func hasPending(_ db: Database) throws -> Bool {
        try lastChangeID(db) > ReplicaState.fetch(db).sealedThrough
    }

    /// Seals every pending change into one transaction of `replica` with the given authorship,
    /// whatever authorship an app writer marked on them; returns nil when none is pending.
    static func seal(_ db: Database, replica: Replica.ID, clock: any WallClock, as authorship: Authorship) throws
        -> Sealed?
    {
        let state = try ReplicaState.fetch(db)
        let last = try lastChangeID(db)
        guard last > state.sealedThrough else { return nil }
        try db.cachedStatement(sql: "DELETE FROM tidemark_authorship WHERE first_change <= ?").execute(arguments: [last]
        )
        return try record(db, replica: replica, clock: clock, state: state, through: last, authorship)
    }

    /// Seals every pending change: each run an app writer marked with an author becomes its own
    /// transaction with that authorship, and every run between them one transaction with none (the
    /// writes of other clients). Returns the transactions sealed, in order.
    static func sealPending(_ db: Database, replica: Replica.ID, clock: any WallClock) throws -> [Sealed] {
        var state = try ReplicaState.fetch(db)
        let last = try lastChangeID(db)
        guard last > state.sealedThrough else { return [] }
        var runs: [(through: Int64, Authorship)] = []
        var next = state.sealedThrough + 1
        let marks = try Row.fetchAll(
            db.cachedStatement(
                sql:
                    "SELECT first_change, last_change, author, context, pid FROM tidemark_authorship WHERE first_change <= ? ORDER BY first_change"
            ),
            arguments: [last])
        for mark in marks {
            let first = max(mark[0] as Int64, next)
            let end = min(mark[1] as Int64, last)
            guard end >= first else { continue }
            if first > next { runs.append((first - 1, .external)) }
            runs.append((end, Authorship(author: mark[2], contextName: mark[3], processID: mark[4])))
            next = end + 1
        }
        if next <= last { runs.append((last, .external)) }
        if !marks.isEmpty {
            try db.cachedStatement(sql: "DELETE FROM tidemark_authorship WHERE first_change <= ?").execute(arguments: [
                last
            ])
        }
        var sealed: [Sealed] = []
        for (through, authorship) in runs {
            let transaction = try record(db, replica: replica, clock: clock, state: state, through: through, authorship)
            state.lastTimestamp = transaction.timestamp
            state.sequence = transaction.sequence
            state.sealedThrough = through
            sealed.append(transaction)
        }
        return sealed
    }

    /// Records the changes after `state.sealedThrough` through `last` as the next transaction.
    private static func record(
        _ db: Database, replica: Replica.ID, clock: any WallClock, state: ReplicaState, through last: Int64,
        _ authorship: Authorship
    ) throws -> Sealed {
        let now = clock.nowMilliseconds()
        guard let timestamp = HLCTimestamp.next(after: state.lastTimestamp, now: now) else {
            throw StoreError.clockOutOfRange(now: now, newest: state.lastTimestamp)
        }
        let sequence = state.sequence + 1
        try HistoryWriter.recordTransaction(
            db, origin: replica, sequence: sequence, timestamp: timestamp, authorship: authorship,
            changes: state.sealedThrough + 1, through: last)
        try ReplicaState.sealed(timestamp: timestamp, sequence: sequence, through: last, db)
        // Runs on every write through the API: prepared once per connection.
        try db.cachedStatement(
            sql: """
                INSERT INTO tidemark_replicas(replica, max_seq) VALUES (?, ?)
                ON CONFLICT(replica) DO UPDATE SET max_seq = excluded.max_seq
                """
        ).execute(arguments: [Data(replica.bytes), sequence])
        return Sealed(sequence: sequence, timestamp: timestamp, changeCount: last - state.sealedThrough)
    }
}
