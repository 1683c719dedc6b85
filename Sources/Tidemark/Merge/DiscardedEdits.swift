import Foundation
import GRDB
import TidemarkCore

/// Edits that merging discards by the generation rule alone, with no constraint involved, found so
/// that none goes silently (Protocol/merge.md §4.5):
/// - **own edits**: this replica's writes in a row life that a newer life ends, when whoever wrote
///   the newer life had not seen them (a delete that did not see an offline edit);
/// - **late edits**: a change of a member retired here to a row life that has ended here (what a
///   member that was away wrote before it learnt of the delete).
/// Both are listed in the conflicts as `deleted`; neither changes what the merge does.
struct DiscardedEdits {
    let db: Database
    let replica: Replica.ID
    /// This replica's own writes at or after this time had not reached the sender of what is being
    /// merged; nil when every own write had.
    private(set) var unseenFrom: HLCTimestamp?
    /// The generation floors, by table id, read at the first need.
    private var floors: [Int64: Int64]?
    /// Whether each origin asked about is retired here.
    private var retired: [Replica.ID: Bool] = [:]
    /// The sender's `through` token, and this store's token before the merge.
    private var through = History.Token.zero
    private var held = History.Token.zero

    init(db: Database, replica: Replica.ID) {
        self.db = db
        self.replica = replica
    }

    /// Learns what the sender of a bundle or snapshot held of this replica's own history: its
    /// `through` token. Own transactions are numbered in the order of their timestamps, so the
    /// first one beyond the token starts the unseen writes.
    mutating func sender(through: History.Token) throws {
        unseenFrom = try HistoryQuery.firstTimestamp(of: replica, after: through[replica], db)
        self.through = through
        held = try Store.currentToken(db)
    }

    /// Whether this store had applied the write of `clock`, found in what the sender holds: it
    /// holds every transaction of that origin that the sender held.
    func hadApplied(_ clock: MergeClock) -> Bool {
        held[clock.origin] > 0 && held[clock.origin] >= through[clock.origin]
    }

    /// The columns of a live row that hold own writes which the writer of `clock` (nil: a snapshot's
    /// sender) had not seen: written at or after `clock` (a writer that had seen a write stamps a
    /// later time), or after what the sender held.
    func ownUnseen(_ known: RowMetadata, against clock: MergeClock?) -> [Int] {
        guard known.isAlive else { return [] }
        return known.clocks.indices.filter { i in
            guard let own = known.clocks[i], own.origin == replica else { return false }
            if let clock, own.writtenAt >= clock.writtenAt { return true }
            return unseenFrom.map { own.writtenAt >= $0 } ?? false
        }
    }

    /// Whether a change of `generation` to an identity with no row state belongs to a life whose
    /// tombstone was dropped here: at or below the table's generation floor (pruning.md §6.3).
    mutating func isBelowFloor(_ generation: Int64, of table: TrackedTable) throws -> Bool {
        if floors == nil { floors = try Tombstones.floors(db) }
        return generation <= floors?[table.id] ?? 0
    }

    /// Whether `origin` is a member retired here (Protocol/pruning.md §1.2), read once per origin
    /// until a change of the members table is merged.
    mutating func isRetired(_ origin: Replica.ID) throws -> Bool {
        if let known = retired[origin] { return known }
        let answer =
            try Bool.fetchOne(
                db, sql: "SELECT retired = 1 FROM tidemark_members WHERE id = ?", arguments: [origin.description])
            ?? false
        retired[origin] = answer
        return answer
    }

    /// Forgets what `isRetired` read: the members table is about to change.
    mutating func forgetRetirements() {
        if !retired.isEmpty { retired = [:] }
    }
}

extension MergeEngine {
    /// Lists the row, with its values here, when a newer life written by `writer` ends own edits it
    /// had not seen; `how` says what the writer did.
    mutating func listOwnUnseen(
        of table: TrackedTable, key: [SQLValue], known: RowMetadata, against clock: MergeClock?, generation: Int64,
        by writer: Replica.ID, how: String
    ) throws {
        let edited = table.isInternal ? [] : discarded.ownUnseen(known, against: clock)
        guard !edited.isEmpty, let values = try targets[table.name]!.rows.values(key: key) else { return }
        let names = edited.map { table.columns[$0] }.joined(separator: ", ")
        let detail =
            clock == nil
            ? "this replica's edit of \(names) is gone: the snapshot of replica \(writer.short), which had not seen it, \(how)"
            : "this replica's edit of \(names) is gone: replica \(writer.short), which had not seen it, \(how)"
        try resolver.record(
            Self.discard(
                table, key: key, values: zip(table.columns, values).map { History.Column($0, $1) }, generation),
            kind: .deleted, detail: detail, origin: writer)
    }

    /// Lists a retired member's change to a row life that has ended here (generation `current`),
    /// with the values it carried.
    func listLate(
        _ change: History.Change, of table: TrackedTable, key: [SQLValue], generation current: Int64,
        by origin: Replica.ID
    )
        throws
    {
        let detail =
            "replica \(origin.short), retired here, edited the row without having seen its delete (its edit was of "
            + "generation \(change.generation)); the edit is discarded"
        try resolver.recordMerging(
            Self.discard(table, key: key, values: change.key + change.values, current), detail: detail, origin: origin)
    }

    /// Lists an update of a row life whose tombstone was dropped here, with the values it carried.
    func listForgotten(_ change: History.Change, of table: TrackedTable, key: [SQLValue], by origin: Replica.ID)
        throws
    {
        guard !table.isInternal else { return }
        let detail =
            "replica \(origin.short) edited the row in a life that had ended here (generation \(change.generation), "
            + "whose tombstone was dropped); the edit is discarded"
        try resolver.recordMerging(
            Self.discard(table, key: key, values: change.key + change.values, change.generation + 1), detail: detail,
            origin: origin)
    }

    /// Whether a snapshot's state of a live row is of a life that ended here, and is discarded
    /// (Protocol/pruning.md §6.7): this store holds no state for the row, its generation is at or
    /// below the table's floor, and one of its writes is one this store had applied, so this store
    /// held that life and dropped the tombstone that ended it. The sender (a replica that joined
    /// from an older snapshot, say, and pruned alone) never saw the delete. The writes this store
    /// had not applied are listed as `deleted`, with the row's values.
    mutating func discardsForgotten(_ state: RowState, key: [SQLValue], cells: [Cell], in target: Target) throws
        -> Bool
    {
        let table = target.table
        guard state.generation % 2 == 1, cells.contains(where: { $0.clock.map(discarded.hadApplied) ?? false }),
            try discarded.isBelowFloor(state.generation, of: table),
            try target.metadata.fetch(db, key: key).generation == 0
        else { return false }
        let unseen = cells.filter { cell in cell.clock.map { !discarded.hadApplied($0) } ?? false }
        guard !table.isInternal, let writer = unseen.first?.clock?.origin else { return true }
        let names = unseen.map { table.columns[$0.index] }.joined(separator: ", ")
        let detail =
            "replica \(writer.short) edited \(names) in a life of the row that had ended here (generation "
            + "\(state.generation), whose tombstone was dropped); the edit is discarded"
        let values =
            zip(table.keyColumns, key).map { History.Column($0, $1) }
            + cells.map { History.Column(table.columns[$0.index], $0.value) }
        try resolver.recordMerging(
            Self.discard(table, key: key, values: values, state.generation + 1), detail: detail, origin: writer)
        return true
    }

    /// A discarded row as `ConflictResolver.record` lists it: its values in the tombstone.
    private static func discard(_ table: TrackedTable, key: [SQLValue], values: [History.Column], _ generation: Int64)
        -> History.Change
    {
        History.Change(
            type: .delete, table: table.name, key: zip(table.keyColumns, key).map { History.Column($0, $1) },
            values: [],
            tombstone: values, generation: generation)
    }
}
