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
        let foldedThrough = try ReplicaState.fetch(db).foldedSequence
        let transactions = try Row.fetchAll(
            db,
            sql:
                "SELECT seq, hlc, first_change, last_change, author, context FROM tidemark_transactions WHERE replica = ? AND seq > ? ORDER BY seq",
            arguments: [own, foldedThrough])
        guard let last = transactions.last else { return }
        let digests = hashesRows ? RowDigests(db: db) : nil
        var pass = try FoldPass(db: db, store: store, digests: digests)
        for transaction in transactions {
            let clock = Sealer.Authorship.clock(
                author: transaction[4], contextName: transaction[5], timestamp: HLCTimestamp(packed: transaction[1]),
                origin: store.replica.id)
            try pass.fold(changes: transaction[2], through: transaction[3], at: clock)
        }
        try pass.finish()
        try digests?.flush(tables: store.replicatedTables)
        try ReplicaState.setFolded(through: last[0], db)
    }

    /// How many tombstones `run` would add, less those it would end, reading only: each row's
    /// last own change not yet folded decides whether the row ends up deleted.
    func tombstonesAdded() throws -> Int {
        let transactions = try Row.fetchAll(
            db,
            sql:
                "SELECT first_change, last_change FROM tidemark_transactions WHERE replica = ? AND seq > ? ORDER BY seq",
            arguments: [Data(store.replica.id.bytes), try ReplicaState.fetch(db).foldedSequence])
        guard !transactions.isEmpty else { return 0 }
        let tables = Dictionary(uniqueKeysWithValues: store.replicatedTables.map { ($0.id, $0) })
        let layout = try ChangeLayout(db)
        let changes = try RawStatement(
            db, sql: HistoryQuery.changesOfTransaction(selecting: layout.selectList + ", id"))
        let clock = MergeClock(timestamp: HLCTimestamp(packed: 0), origin: store.replica.id)
        // Whether each row's last own change deletes it, by table. Imports fold first, so the
        // metadata holds each row's state before the own changes not yet folded.
        var deleted: [Int64: [[SQLValue]: Bool]] = [:]
        for transaction in transactions {
            changes.reset()
            try changes.bind(transaction[0] as Int64, at: 1)
            try changes.bind(transaction[1] as Int64, at: 2)
            while try changes.step() {
                guard let table = tables[changes.int64(0)], let op = Bookkeeping.Op(rawValue: changes.int64(1)),
                    op != .marker
                else { continue }
                deleted[table.id, default: [:]][Captured(changes, layout, table, clock: clock).key] = op == .delete
            }
        }
        let origins = OriginNumbers(db: db)
        var added = 0
        for (id, rows) in deleted {
            let metadata = RowMetadataStore(table: tables[id]!, origins: origins, digests: nil)
            for (key, isDeleted) in rows {
                let generation = try metadata.fetch(db, key: key).generation
                let wasTombstone = generation > 0 && generation.isMultiple(of: 2)
                if isDeleted != wasTombstone { added += isDeleted ? 1 : -1 }
            }
        }
        return added
    }
}

/// One run of the fold, over the own transactions not folded yet: the statements and the state
/// their changes share.
private struct FoldPass {
    let db: Database
    let store: Store
    /// Whether rows are hashed for the row digests (`LocalFold.hashesRows`).
    let hashesRows: Bool
    let stores: [Int64: RowMetadataStore]
    let access: [Int64: RowAccess]
    /// Where a row's tombstone was dropped, a life started here must outrank it (merge.md §3).
    let floors: [Int64: Int64]
    let layout: ChangeLayout
    /// Per table, the statement column of each of its columns' values in a change's history row.
    let valueColumns: [Int64: [Int32]]
    /// The statement that reads the changes of a transaction.
    let changes: RawStatement
    var generations: GenerationRuns
    var batch = NewRows()
    /// The statement that reads a change again by id, for a batch the store refused; prepared
    /// on the first.
    var single: RawStatement?

    init(db: Database, store: Store, digests: RowDigests?) throws {
        self.db = db
        self.store = store
        hashesRows = digests != nil
        let origins = OriginNumbers(db: db)
        stores = Dictionary(
            uniqueKeysWithValues: store.replicatedTables.map {
                ($0.id, RowMetadataStore(table: $0, origins: origins, digests: digests))
            })
        // A row's hash is made from an insert's values, or read from the table as it is now: every
        // later write to it is sealed or pending, and is hashed again when it is folded.
        access = Dictionary(
            uniqueKeysWithValues: store.replicatedTables.map { ($0.id, RowAccess(db: db, table: $0)) })
        floors = try Tombstones.floors(db)
        let layout = try ChangeLayout(db)
        self.layout = layout
        valueColumns = Dictionary(
            uniqueKeysWithValues: store.replicatedTables.map { table in
                (table.id, table.slots.map { Int32(layout.valueIndex($0)) })
            })
        changes = try RawStatement(db, sql: HistoryQuery.changesOfTransaction(selecting: layout.selectList + ", id"))
        generations = try GenerationRuns(db)
    }

    /// The change on the current row of `statement` (selected with `layout`, then the id), of
    /// `table`, written at `clock`; an insert of the whole row hashed from what history holds.
    private func captured(_ statement: RawStatement, of table: TrackedTable, at clock: MergeClock) throws -> Captured {
        var change = Captured(statement, layout, table, clock: clock)
        if change.op == .insert, hashesRows, table.slots.allSatisfy(change.mask.contains),
            let rows = access[table.id], let columns = valueColumns[table.id]
        {
            change.insertedHash = try rows.hash(captured: statement, columns: columns)
        }
        return change
    }

    /// Folds the changes `first` through `last` of one transaction, written at `clock`.
    mutating func fold(changes first: Int64, through last: Int64, at clock: MergeClock) throws {
        changes.reset()
        try changes.bind(first, at: 1)
        try changes.bind(last, at: 2)
        while try changes.step() {
            guard let metadataStore = stores[changes.int64(0)], let op = Bookkeeping.Op(rawValue: changes.int64(1)),
                op != .marker
            else { continue }
            let table = metadataStore.table
            let change = try captured(changes, of: table, at: clock)
            // Inserts of new rows of one table, one after another, have their metadata written
            // many to a statement; anything else first writes those.
            if op == .insert, metadataStore.expectsNewRows, !table.isInternal, batch.takes(table) {
                if batch.store !== metadataStore { try flush() }
                let metadata = try folded(.unseen(columnCount: table.columns.count), change, of: table)
                batch.store = metadataStore
                try metadataStore.appendNewRow(db, key: change.key, metadata, to: &batch.values)
                batch.rows.append((change.id, metadata.generation, metadata.rowHash, clock))
                if batch.rows.count >= MultiRowInsert.rowsPerStatement(width: metadataStore.newRowWidth, db) {
                    try flush()
                }
                continue
            }
            try flush()
            try foldAlone(change, into: metadataStore)
        }
    }

    /// Writes what is still pending: the last batch of new rows and the last run of generations.
    mutating func finish() throws {
        try flush()
        try generations.flush()
    }

    /// The row's metadata after `change`, from what it was before.
    private func folded(_ before: RowMetadata, _ change: Captured, of table: TrackedTable) throws -> RowMetadata {
        var metadata = before
        if metadata.generation == 0, let floor = floors[table.id] { metadata.generation = floor }
        switch change.op {
        case .insert:
            if !metadata.isAlive { metadata.startLife(metadata.afterInsert) }
            for i in table.columns.indices where change.writes(i, of: table) { metadata.clocks[i] = change.clock }
        case .update:
            if !metadata.isAlive { metadata.generation = metadata.afterInsert }
            for i in table.columns.indices where change.writes(i, of: table) { metadata.clocks[i] = change.clock }
        case .delete, .marker:
            metadata.startLife(metadata.afterDelete)
        }
        metadata.rowHash = nil
        if metadata.isAlive && hashesRows, let rows = access[table.id] {
            metadata.rowHash = try change.insertedHash ?? rows.hash(key: change.key)
        }
        return metadata
    }

    /// Folds `change` one row at a time: an insert that most often starts the life of a row
    /// with no metadata is saved as that without the read, made only when the store holds
    /// some after all.
    private mutating func foldAlone(_ change: Captured, into metadataStore: RowMetadataStore) throws {
        let table = metadataStore.table
        if change.op == .insert, metadataStore.expectsNewRows {
            var metadata = try folded(.unseen(columnCount: table.columns.count), change, of: table)
            if try metadataStore.saveNew(db, key: change.key, &metadata) {
                try generations.record(metadata.generation, of: change.id, change.op)
                return
            }
        }
        var metadata = try folded(try metadataStore.fetch(db, key: change.key), change, of: table)
        try metadataStore.save(db, key: change.key, &metadata)
        try generations.record(metadata.generation, of: change.id, change.op)
    }

    /// Writes the metadata of the rows `batch` holds in one statement, or folds each alone
    /// when the store refuses it (it held metadata for one after all).
    private mutating func flush() throws {
        guard let metadataStore = batch.store else { return }
        batch.store = nil
        // Taken out and put back emptied, so that the next batch reuses their storage.
        var (values, rows) = ([SQLValue](), [NewRows.Row]())
        swap(&values, &batch.values)
        swap(&rows, &batch.rows)
        defer {
            values.removeAll(keepingCapacity: true)
            rows.removeAll(keepingCapacity: true)
            swap(&values, &batch.values)
            swap(&rows, &batch.rows)
        }
        if try metadataStore.insertNew(db, values, count: rows.count) {
            batch.written[metadataStore.table.id, default: 0] += 1
            metadataStore.noteNew(hashes: rows.map(\.hash))
            for row in rows { try generations.record(row.generation, of: row.id, .insert) }
            return
        }
        batch.refusals[metadataStore.table.id, default: 0] += 1
        let layout = layout
        let reread = try RawStatement.reusing(&single, db) {
            HistoryQuery.changesOfTransaction(selecting: layout.selectList + ", id")
        }
        for row in rows {
            reread.reset()
            try reread.bind(row.id, at: 1)
            try reread.bind(row.id, at: 2)
            guard try reread.step() else {
                throw StoreError.database(
                    path: store.path, message: "change \(row.id) of history was not there to fold again")
            }
            let change = try captured(reread, of: metadataStore.table, at: row.clock)
            reread.reset()
            try foldAlone(change, into: metadataStore)
        }
    }
}

/// One captured change, as the fold reads it: which row and which columns it wrote, and for an
/// insert of the whole row, the hash of the row it left, made without reading the row.
private struct Captured {
    var id: Int64
    var op: Bookkeeping.Op
    var key: [SQLValue]
    var mask: ColumnMask
    var insertedHash: Int64?
    var clock: MergeClock

    /// The change on the current row of `statement`, selected with `layout` and then its id, of
    /// `table`, written at `clock`.
    init(_ statement: RawStatement, _ layout: ChangeLayout, _ table: TrackedTable, clock: MergeClock) {
        let value = { (i: Int) in statement.value(Int32(layout.valueIndex(table.slots[i]))) }
        id = statement.int64(Int32(layout.count))
        op = Bookkeeping.Op(rawValue: statement.int64(1)) ?? .marker
        key = table.keyIndexes.map(value)
        mask = layout.mask(statement)
        self.clock = clock
    }

    /// Whether the change wrote non-key column `i` of `table`.
    func writes(_ i: Int, of table: TrackedTable) -> Bool {
        mask.contains(table.slots[i]) && !table.keyIndexes.contains(i)
    }
}

/// Inserts of new rows of one table waiting to have their metadata written together
/// (`RowMetadataStore.appendNewRow`), with what each needs once written, or to be folded again
/// alone; and per table, how many batches the store took and refused.
private struct NewRows {
    typealias Row = (id: Int64, generation: Int64, hash: Int64?, clock: MergeClock)
    var store: RowMetadataStore?
    var values: [SQLValue] = []
    var rows: [Row] = []
    var written: [Int64: Int] = [:]
    var refusals: [Int64: Int] = [:]

    /// Whether inserts into `table` are batched: until its refused batches outnumber those
    /// written by four (rows inserted again after their delete, say, which hold metadata), when
    /// each batch costs a statement more than folding its rows alone.
    func takes(_ table: TrackedTable) -> Bool {
        refusals[table.id, default: 0] < written[table.id, default: 0] + 4
    }
}

/// Writes the generations of folded changes into their history rows, one statement per run of
/// consecutive change ids that share a generation (a run of inserts of rows inserted again after
/// their delete, say): each statement costs about as much as writing a single row by id. A
/// generation that is its change kind's default is not written (`Op.defaultGeneration`).
private struct GenerationRuns {
    private let statement: RawStatement
    private var run: (first: Int64, last: Int64, generation: Int64)?

    init(_ db: Database) throws {
        statement = try RawStatement(db, sql: "UPDATE tidemark_changes SET gen = ? WHERE id BETWEEN ? AND ?")
    }

    /// Records that change `id`, of kind `op`, left its row at `generation`. Ids come in
    /// increasing order; a skipped id (a marker, a change of a table not replicated, one whose
    /// generation is its kind's default) ends the run.
    mutating func record(_ generation: Int64, of id: Int64, _ op: Bookkeeping.Op) throws {
        guard generation != op.defaultGeneration else { return }
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
