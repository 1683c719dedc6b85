import Foundation
import GRDB
import TidemarkCore

/// Folds this replica's own captured changes into row metadata (Protocol/merge.md §3), lazily:
/// capture only appends to history, and the fold runs before anything reads metadata — an export
/// (which needs each change's generation), an import (which merges against it) or a prune (which
/// must never delete history that is not yet folded).
struct LocalFold {
    let db: Database
    let store: Store
    /// Whether rows are hashed for the row digests. A migration folds without when another client
    /// changed the schema: its tables may then no longer have the registered columns, and every
    /// table is counted again after.
    var hashesRows = true

    /// Folds every own transaction sealed since the last fold.
    func run() throws {
        try store.registrations.refresh(db)
        let own = Data(store.replica.id.bytes)
        let folded = try ReplicaState.fetch(db).foldedSequence
        let transactions = try Row.fetchAll(
            db,
            sql:
                "SELECT seq, hlc, first_change, last_change FROM tidemark_transactions WHERE replica = ? AND seq > ? ORDER BY seq",
            arguments: [own, folded])
        guard let last = transactions.last else { return }
        let origins = OriginNumbers(db: db)
        let digests = hashesRows ? RowDigests(db: db) : nil
        let stores = Dictionary(
            uniqueKeysWithValues: store.replicatedTables.map {
                ($0.id, RowMetadataStore(table: $0, origins: origins, digests: digests))
            })
        // A row's hash is made from an insert's values, or read from the table as it is now: every
        // later write to it is sealed or pending, and is hashed again when it is folded.
        let access = Dictionary(
            uniqueKeysWithValues: store.replicatedTables.map { ($0.id, RowAccess(db: db, table: $0)) })
        // Where a row's tombstone was dropped, a life started here must outrank it (merge.md §3).
        let floors = try Tombstones.floors(db)
        let layout = try ChangeLayout(db)
        // The key values and the column mask matter here: which row, and which columns the change
        // wrote; and an insert's values, which make the row's hash without reading it.
        let changes = try RawStatement(
            db, sql: HistoryQuery.changesOfTransaction(selecting: layout.selectList + ", id"))
        var generations = try GenerationRuns(db)
        for transaction in transactions {
            let clock = MergeClock(timestamp: HLCTimestamp(packed: transaction[1]), origin: store.replica.id)
            changes.reset()
            try changes.bind(transaction[2] as Int64, at: 1)
            try changes.bind(transaction[3] as Int64, at: 2)
            while try changes.step() {
                guard let metadataStore = stores[changes.int64(0)], let op = Bookkeeping.Op(rawValue: changes.int64(1)),
                    op != .marker
                else { continue }
                let table = metadataStore.table
                let mask = layout.mask(changes)
                let id = changes.int64(Int32(layout.count))
                let key = table.keyIndexes.map { changes.value(Int32(layout.valueIndex(table.slots[$0]))) }
                let written = { (i: Int) in mask.contains(table.slots[i]) && !table.keyIndexes.contains(i) }
                /// The row's metadata after this change, from what it was before.
                func folded(_ before: RowMetadata) throws -> RowMetadata {
                    var metadata = before
                    if metadata.generation == 0, let floor = floors[table.id] { metadata.generation = floor }
                    switch op {
                    case .insert:
                        if !metadata.isAlive { metadata.startLife(metadata.afterInsert) }
                        for i in table.columns.indices where written(i) { metadata.clocks[i] = clock }
                    case .update:
                        if !metadata.isAlive { metadata.generation = metadata.afterInsert }
                        for i in table.columns.indices where written(i) { metadata.clocks[i] = clock }
                    case .delete, .marker:
                        metadata.startLife(metadata.afterDelete)
                    }
                    metadata.rowHash = nil
                    if metadata.isAlive && hashesRows, let rows = access[table.id] {
                        if op == .insert {
                            let values = table.columns.indices.map { i -> SQLValue? in
                                mask.contains(table.slots[i])
                                    ? changes.value(Int32(layout.valueIndex(table.slots[i]))) : nil
                            }
                            metadata.rowHash = try rows.hash(key: key, holding: values)
                        } else {
                            metadata.rowHash = try rows.hash(key: key)
                        }
                    }
                    return metadata
                }
                // An insert most often starts the life of a row with no metadata: it is saved as
                // that without the read, which is made only when the store holds some after all.
                if op == .insert, metadataStore.expectsNewRows {
                    var metadata = try folded(.unseen(columnCount: table.columns.count))
                    if try metadataStore.saveNew(db, key: key, &metadata) {
                        try generations.record(metadata.generation, of: id)
                        continue
                    }
                }
                var metadata = try folded(try metadataStore.fetch(db, key: key))
                try metadataStore.save(db, key: key, &metadata)
                try generations.record(metadata.generation, of: id)
            }
        }
        try generations.flush()
        try digests?.flush(tables: store.replicatedTables)
        try ReplicaState.setFolded(through: last[0], db)
    }
}

/// Writes the generations of folded changes into their history rows, one statement per run of
/// consecutive change ids that share a generation (a run of inserts of new rows, of updates of
/// live ones): each statement costs about as much as writing a single row by id.
private struct GenerationRuns {
    private let statement: RawStatement
    private var run: (first: Int64, last: Int64, generation: Int64)?

    init(_ db: Database) throws {
        statement = try RawStatement(db, sql: "UPDATE tidemark_changes SET gen = ? WHERE id BETWEEN ? AND ?")
    }

    /// Records that change `id` left its row at `generation`. Ids come in increasing order; a
    /// skipped id (a marker, a change of a table not replicated) ends the run.
    mutating func record(_ generation: Int64, of id: Int64) throws {
        if let run, run.generation == generation, run.last + 1 == id {
            self.run?.last = id
            return
        }
        try flush()
        run = (id, id, generation)
    }

    /// Writes the pending run.
    mutating func flush() throws {
        guard let run else { return }
        statement.reset()
        try statement.bind(run.generation, at: 1)
        try statement.bind(run.first, at: 2)
        try statement.bind(run.last, at: 3)
        try statement.execute()
        self.run = nil
    }
}
