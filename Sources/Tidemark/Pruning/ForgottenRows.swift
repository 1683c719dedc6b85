import Foundation
import GRDB
import TidemarkCore

/// Rows a snapshot shows deleted by leaving them out (Protocol/pruning.md §6.6).
///
/// A snapshot lists every row identity its sender keeps state for, tombstones included. A live row
/// here that it leaves out, whose generation is below the floor the snapshot declares for its
/// table, and which holds a write the sender had applied, is a row whose life the sender saw end
/// and whose tombstone it then dropped: its history is gone, so nothing else will tell this store.
/// Such a row is deleted here as the snapshot's other tombstones are, and own edits the sender had
/// not seen are listed as discarded. So is a row whose columns all hold own edits the sender had not
/// seen, when nothing here the sender lacked can have started its life. Any other row is kept: it
/// may be a life the sender never heard of.
struct ForgottenRows {
    private let db: Database
    private let own: Replica.ID
    /// The snapshot's floor per table id, for the tables with a live row here below it.
    private let floors: [Int64: Int64]
    /// The snapshot's `through` token: what its sender had applied.
    private let through: History.Token
    /// Per table id, the statement that notes a key the snapshot lists.
    private var listed: [Int64: RawStatement] = [:]
    /// Per origin, what this store can tell of which of its writes the sender had applied.
    private var coverage: [Replica.ID: Coverage] = [:]
    /// Per table id, the keys of rows whose life a change the sender lacked may have started: own
    /// inserts, and changes of other origins, beyond the snapshot's token. Nil until needed, and
    /// when some origin's history here is pruned beyond the token (then no life is known to start
    /// from what the sender had).
    private var unseenStarts: [Int64: Set<[SQLValue]>]??
    /// Per origin, the last sequence number this store pruned of its history; read at the first need.
    private var prunedThrough: [Replica.ID: Int64]?

    /// What the sender had applied of one origin's writes that this store holds.
    private enum Coverage {
        /// Every write stamped before this time (every write when nil).
        case before(HLCTimestamp?)
        /// Not known: this store pruned that origin's history beyond the sender's token, so its
        /// writes cannot be told apart.
        case unknown
    }

    /// Prepares for a snapshot of `through` declaring `floors` (by table, in this store's names).
    /// Notes nothing unless some table has a live row below its floor.
    init(db: Database, own: Replica.ID, through: History.Token, floors: [(TrackedTable, Int64)]) throws {
        self.db = db
        self.own = own
        self.through = through
        var below: [Int64: Int64] = [:]
        for (table, floor) in floors where floor > 1 {
            let exists = try Bool.fetchOne(
                db,
                sql:
                    "SELECT EXISTS (SELECT 1 FROM \(Bookkeeping.rowMetadataTable(table)) WHERE gen % 2 = 1 AND gen < ?)",
                arguments: [floor])
            if exists == true { below[table.id] = floor }
        }
        self.floors = below
    }

    /// Notes that the snapshot lists row `key` of `table`.
    mutating func note(_ target: MergeEngine.Target, key: [History.Column]) throws {
        guard floors[target.table.id] != nil else { return }
        let table = target.table
        if listed[table.id] == nil {
            let keys = table.keyIndexes.indices.map { "k\($0)" }
            // Kept by the connection, empty between imports: SQLite cannot drop a table while
            // other statements of the import are still open.
            try db.execute(
                sql: "CREATE TEMP TABLE IF NOT EXISTS \(Self.listedTable(table.id))(\(keys.joined(separator: ", ")), "
                    + "PRIMARY KEY(\(keys.joined(separator: ", ")))) WITHOUT ROWID")
            try db.execute(sql: "DELETE FROM temp.\(Self.listedTable(table.id))")
            listed[table.id] = try RawStatement(
                db,
                sql: "INSERT OR IGNORE INTO temp.\(Self.listedTable(table.id)) "
                    + "VALUES (\(keys.map { _ in "?" }.joined(separator: ", ")))")
        }
        let statement = listed[table.id]!
        statement.reset()
        try statement.bind(key.lazy.map(\.value))
        try statement.execute()
    }

    /// Deletes, through `engine`, the live rows below their table's floor that the snapshot of
    /// `sender` left out and whose life it knew (a write it had applied is in the row, or nothing
    /// it lacked can have started the life). Returns the names of the tables it deleted rows of.
    mutating func settle(_ engine: inout MergeEngine, sender: Replica.ID) throws -> Set<String> {
        try engine.flushNewRows()
        var deleted = Set<String>()
        for table in engine.targets.values.map(\.table).sorted(by: { $0.id < $1.id }) {
            guard let floor = floors[table.id] else { continue }
            let keys = table.keyIndexes.indices.map { "k\($0)" }
            let match = keys.map { "s.\($0) IS m.\($0)" }.joined(separator: " AND ")
            let left =
                listed[table.id] == nil
                ? "" : " AND NOT EXISTS (SELECT 1 FROM temp.\(Self.listedTable(table.id)) s WHERE \(match))"
            let candidates = try RawStatement.rows(
                db,
                sql: "SELECT \(keys.joined(separator: ", ")) FROM \(Bookkeeping.rowMetadataTable(table)) m "
                    + "WHERE gen % 2 = 1 AND gen < ?\(left)",
                arguments: [.integer(floor)])
            for key in candidates {
                let known = try engine.targets[table.name]!.metadata.fetch(db, key: key)
                guard try provesSeen(known) || startedSeen(table, key: key, tables: engine.targets) else { continue }
                try engine.forget(table: table, key: key, known: known, sender: sender)
                deleted.insert(table.name)
            }
        }
        for id in listed.keys { try db.execute(sql: "DELETE FROM temp.\(Self.listedTable(id))") }
        listed = [:]
        return deleted
    }

    /// Whether the row holds a write the snapshot's sender had applied: then it knew this life.
    private mutating func provesSeen(_ metadata: RowMetadata) throws -> Bool {
        for clock in metadata.clocks {
            if let clock, try senderApplied(clock) { return true }
        }
        return false
    }

    /// Whether the life of row `key` started with a write the sender had applied: no change here
    /// that the sender lacked can have started it, and no history it might be in was pruned here.
    private mutating func startedSeen(_ table: TrackedTable, key: [SQLValue], tables: [String: MergeEngine.Target])
        throws -> Bool
    {
        if unseenStarts == nil { unseenStarts = try readUnseenStarts(tables: tables) }
        guard let starts = unseenStarts! else { return false }
        return starts[table.id]?.contains(key) != true
    }

    /// `unseenStarts`, read from the history the snapshot's token does not cover.
    private mutating func readUnseenStarts(tables: [String: MergeEngine.Target]) throws -> [Int64: Set<[SQLValue]>]? {
        for (origin, pruned) in try pruned() where pruned > through[origin] { return nil }
        let byID = Dictionary(uniqueKeysWithValues: tables.values.map { ($0.table.id, $0.table) })
        let layout = try ChangeLayout(db)
        let changes = try RawStatement(db, sql: HistoryQuery.changesOfTransaction(selecting: layout.selectList))
        let uncovered = HistoryQuery.notCovered(by: through)
        let transactions = try Row.fetchAll(
            db,
            sql: "SELECT replica, first_change, last_change FROM tidemark_transactions"
                + (uncovered.map { " WHERE \($0.sql)" } ?? ""),
            arguments: StatementArguments(uncovered?.arguments ?? []))
        var starts: [Int64: Set<[SQLValue]>] = [:]
        for transaction in transactions {
            let isOwn = try transaction.decode(Replica.ID.self, atIndex: 0) == own
            changes.reset()
            try changes.bind(transaction[1] as Int64, at: 1)
            try changes.bind(transaction[2] as Int64, at: 2)
            while try changes.step() {
                guard let table = byID[changes.int64(0)], let op = Bookkeeping.Op(rawValue: changes.int64(1)),
                    op != .marker, !isOwn || op == .insert
                else { continue }
                let key = table.keyIndexes.map { changes.value(Int32(layout.valueIndex(table.slots[$0]))) }
                starts[table.id, default: []].insert(key)
            }
        }
        return starts
    }

    /// `prunedThrough`, read once.
    private mutating func pruned() throws -> [Replica.ID: Int64] {
        if let prunedThrough { return prunedThrough }
        var read: [Replica.ID: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT replica, pruned_through FROM tidemark_replicas") {
            read[try row.decode(Replica.ID.self, atIndex: 0)] = row[1]
        }
        prunedThrough = read
        return read
    }

    /// Whether the snapshot's sender had applied the write stamped `clock`.
    private mutating func senderApplied(_ clock: MergeClock) throws -> Bool {
        let origin = clock.origin
        if coverage[origin] == nil {
            if try pruned()[origin] ?? 0 > through[origin] {
                coverage[origin] = .unknown
            } else {
                coverage[origin] = .before(try HistoryQuery.firstTimestamp(of: origin, after: through[origin], db))
            }
        }
        switch coverage[origin]! {
        case .unknown: return false
        case .before(nil): return true
        case .before(let first?): return clock.writtenAt < first
        }
    }

    private static func listedTable(_ id: Int64) -> String { "tidemark_listed_\(id)" }
}

extension MergeEngine {
    /// Deletes row `key` of `table`, whose life the snapshot of `sender` shows ended: its
    /// tombstone outranks the life, and own edits the sender had not seen are listed first.
    mutating func forget(table: TrackedTable, key: [SQLValue], known: RowMetadata, sender: Replica.ID) throws {
        let target = targets[table.name]!
        var known = known
        let generation = known.afterDelete
        try listOwnUnseen(
            of: table, key: key, known: known, against: nil, generation: generation, by: sender,
            how: "had seen the row deleted and forgot its tombstone")
        known.startLife(generation)
        try deleteSettlingActions(key: key, in: target, clock: nil)
        digests.noteMerged(table)
        known.rowHash = nil
        try target.metadata.save(db, key: key, &known)
    }
}
