import GRDB
import TidemarkCore

/// Applies imported changes by the merge rules of Protocol/merge.md, so that every replica that has
/// seen the same transactions holds the same rows whatever order they arrived in:
/// a change of an older row life than known is stale and dropped; a newer life replaces the row
/// (or deletes it); within one life each column keeps the write with the greatest clock.
struct MergeEngine {
    let db: Database
    /// Per table name: its registration, row metadata and rows, looked up once per change.
    let targets: [String: Target]
    var resolver: ConflictResolver
    /// The row digests every metadata save updates; `flush` them before the access ends.
    let digests: RowDigests
    /// The rows the app's foreign-key actions change as the merge writes their parents.
    let effects: ActionEffects
    /// Finds the edits the generation rule discards, to list them (merge.md §4.5).
    var discarded: DiscardedEdits
    /// New rows waiting to be written many to a statement (`flushNewRows`).
    private var newRows = NewRowBatch()
    /// Set while `flushNewRows` merges a batch one row at a time, which must not batch them again.
    private var replaying = false
    /// The table looked up last, and its target.
    private var recentTarget: (name: String, target: Target)?
    /// Rows whose write a constraint refused, deferred to the end of their transaction or snapshot.
    var deferred = DeferredRows()
    /// Set while `settleDeferred` merges deferred rows for the last time: a refusal is settled then.
    var settling = false

    /// What the engine merges: a change written at a clock, or a row state from its sender.
    enum Source {
        case change(History.Change, MergeClock)
        case state(RowState, Replica.ID)
    }

    init(db: Database, store: Store, now: @escaping () -> HLCTimestamp) throws {
        self.db = db
        let origins = OriginNumbers(db: db)
        let digests = RowDigests(db: db)
        self.digests = digests
        let foreignKeys = try ForeignKeys(db: db, tables: store.replicatedTables)
        let touched = TouchedRows(watching: foreignKeys.tables)
        var tables: [String: TrackedTable] = [:]
        var metadata: [String: RowMetadataStore] = [:]
        var targets: [String: Target] = [:]
        // An app's connection may have a pre-update hook of its own (`PreUpdateRow`).
        let ownConnection = store.attachedWriter == nil
        let effects = try ActionEffects(
            db: db, tables: store.replicatedTables, actionParents: foreignKeys.actionParents,
            ownConnection: ownConnection)
        self.effects = effects
        for table in store.replicatedTables {
            let store = RowMetadataStore(table: table, origins: origins, digests: digests)
            tables[table.name] = table
            metadata[table.name] = store
            let rows = RowAccess(db: db, table: table, catchesWrittenRows: ownConnection)
            rows.touched = touched
            rows.effects = effects
            targets[table.name] = Target(table: table, metadata: store, rows: rows)
        }
        self.targets = targets
        resolver = ConflictResolver(
            db: db, replica: store.replica.id, tables: tables, metadata: metadata, foreignKeys: foreignKeys,
            touched: touched, digests: digests, now: now)
        resolver.effects = effects
        discarded = DiscardedEdits(db: db, replica: store.replica.id)
    }

    /// Merges one change written at `clock`. A change of a row deferred in this transaction joins
    /// its deferred change; a write a constraint refuses is deferred (`DeferredRows`).
    mutating func apply(_ change: History.Change, clock: MergeClock) throws {
        if deferred.join(change) { return }
        do {
            try merge(change, clock: clock)
        } catch is RefusedWrite {
            deferred.add(.change(change, clock), table: change.table, key: change.key)
        }
    }

    /// Merges what `source` holds, as `apply` does.
    mutating func apply(_ source: Source) throws {
        switch source {
        case .change(let change, let clock): try apply(change, clock: clock)
        case .state(let state, let sender): try apply(state, from: sender)
        }
    }

    private mutating func merge(_ change: History.Change, clock: MergeClock) throws {
        guard let target = target(named: change.table) else { return }
        let key = change.key.map { $0.value }
        // A change of the members table may retire or bring back the writer of the next one.
        if target.isInternal {
            try flushNewRows()
            discarded.forgetRetirements()
        }
        let generation = change.generation
        let cells = written(by: change, in: target, at: clock)
        if change.type == .insert, generation % 2 == 1, target.metadata.expectsNewRows {
            if try batchNew(key: key, generation: generation, cells: cells, into: target, .change(change, clock)) {
                return
            }
            try flushNewRows()
            if try startNew(key: key, generation: generation, cells: cells, into: target) { return }
        } else {
            try flushNewRows()
            // The batch may have deferred this row.
            if deferred.join(change) { return }
        }
        let (table, store) = (target.table, target.metadata)
        var known = try store.fetch(db, key: key)
        if generation < known.generation {
            if change.type != .delete, !target.isInternal, try discarded.isRetired(clock.origin) {
                try listLate(change, of: table, key: key, generation: known.generation, by: clock.origin)
            }
            return
        }
        if known.generation == 0, change.type == .update, try discarded.isBelowFloor(generation, of: table) {
            // Its writer held the row in this life, and this replica has applied everything its
            // writer had: the life ended here and its tombstone was dropped (merge.md §4.1).
            try listForgotten(change, of: table, key: key, by: clock.origin)
            return
        }
        let incoming = cells.map { ($0.index, $0.value) }
        if generation > known.generation {
            try listOwnUnseen(
                of: table, key: key, known: known, against: clock, generation: generation, by: clock.origin,
                how: change.type == .delete ? "deleted the row" : "wrote a later life of the row")
            known.startLife(generation)
            if change.type == .delete {
                try deleteSettlingActions(key: key, in: target, clock: clock)
                digests.noteMerged(table)
                known.rowHash = nil
                try store.save(db, key: key, &known)
                return
            }
            for (i, _) in incoming { known.clocks[i] = clock }
            _ = try write(key: key, columns: incoming, upsert: true, into: target, metadata: &known)
            return
        }
        // Same life.
        guard known.isAlive, change.type != .delete else { return }
        // An equal clock is the same transaction writing the column again: its later change wins.
        let winners = incoming.filter { i, _ in known.clocks[i].map { clock >= $0 } ?? true }
        guard !winners.isEmpty else { return }
        for (i, _) in winners { known.clocks[i] = clock }
        if try !write(key: key, columns: winners, upsert: false, into: target, metadata: &known) {
            try settleRemoved(table: table, key: key, values: incoming)
        }
    }

    /// A row alive by its metadata but absent here, which a change or row state of its life
    /// writes: a foreign-key action removed it during an import. Settled as a delete every replica
    /// will see (merge.md §4.4), listing `values` (index, value), what the write carried.
    private mutating func settleRemoved(table: TrackedTable, key: [SQLValue], values: [(Int, SQLValue)]) throws {
        var row = [SQLValue](repeating: .null, count: table.columns.count)
        for (i, v) in zip(table.keyIndexes, key) { row[i] = v }
        for (i, v) in values { row[i] = v }
        try resolver.systemDelete(
            table: table, key: key, values: row, kind: .removed,
            detail:
                "the row was gone here though its history holds it alive: removed by a foreign-key action, or by another client while the capture triggers were missing"
        )
    }

    /// The target of the table `name`, looked up once for a run of changes or row states of it.
    private mutating func target(named name: String) -> Target? {
        if let recentTarget, recentTarget.name == name { return recentTarget.target }
        guard let target = targets[name] else { return nil }
        recentTarget = (name, target)
        return target
    }

    /// A non-key column a change or row state writes: its index, value and clock.
    typealias Cell = (index: Int, value: SQLValue, clock: MergeClock?)

    /// The non-key columns `change` writes in `target`, at `clock`.
    private func written(by change: History.Change, in target: Target, at clock: MergeClock) -> [Cell] {
        var cells: [Cell] = []
        cells.reserveCapacity(change.values.count)
        for column in change.values {
            if let i = target.nonKeyColumn(column.name) { cells.append((i, column.value, clock)) }
        }
        return cells
    }

    /// Merges one row state from a snapshot sent by `sender`: the same rules, with each column's own
    /// clock. A state whose write a constraint refuses is deferred (`DeferredRows`).
    mutating func apply(_ state: RowState, from sender: Replica.ID) throws {
        do {
            try merge(state, from: sender)
        } catch is RefusedWrite {
            deferred.add(.state(state, sender), table: state.table, key: state.key)
        }
    }

    private mutating func merge(_ state: RowState, from sender: Replica.ID) throws {
        guard let target = target(named: state.table) else { return }
        let key = state.key.map { $0.value }
        var cells: [Cell] = []
        cells.reserveCapacity(state.cells.count)
        for cell in state.cells {
            if let i = target.nonKeyColumn(cell.name) { cells.append((i, cell.value, cell.clock)) }
        }
        if try discardsForgotten(state, key: key, cells: cells, in: target) { return }
        if state.generation % 2 == 1, target.metadata.expectsNewRows {
            if try batchNew(key: key, generation: state.generation, cells: cells, into: target, .state(state, sender)) {
                return
            }
            try flushNewRows()
            if try startNew(key: key, generation: state.generation, cells: cells, into: target) { return }
        } else {
            try flushNewRows()
        }
        let (table, store) = (target.table, target.metadata)
        var known = try store.fetch(db, key: key)
        if state.generation < known.generation { return }
        var winners: [(Int, SQLValue)]
        if state.generation > known.generation {
            try listOwnUnseen(
                of: table, key: key, known: known, against: nil, generation: state.generation, by: sender,
                how: state.generation % 2 == 0 ? "holds the row deleted" : "holds a later life of the row")
            known.startLife(state.generation)
            if state.generation % 2 == 0 {
                try deleteSettlingActions(key: key, in: target, clock: nil)
                digests.noteMerged(table)
                known.rowHash = nil
                try store.save(db, key: key, &known)
                return
            }
            winners = cells.map { ($0.index, $0.value) }
            for (i, _, clock) in cells { known.clocks[i] = clock }
        } else {
            guard known.isAlive else { return }
            winners = []
            winners.reserveCapacity(cells.count)
            // An equal clock is the same write (merge.md §4.3): the column holds its value already.
            // A snapshot names each row once, so no later write of the same transaction follows.
            for (i, value, clock) in cells {
                guard let clock, known.clocks[i].map({ clock > $0 }) ?? true else { continue }
                winners.append((i, value))
                known.clocks[i] = clock
            }
            guard !winners.isEmpty else { return }
            // Only the columns that win: an upsert would offer SQLite a row without the others,
            // which a NOT NULL column refuses before the conflict is seen.
            if try !write(key: key, columns: winners, upsert: false, into: target, metadata: &known) {
                try settleRemoved(table: table, key: key, values: cells.map { ($0.index, $0.value) })
            }
            return
        }
        _ = try write(key: key, columns: winners, upsert: true, into: target, metadata: &known)
    }

    /// Starts row life `generation` (odd) with `cells` on a row this store holds no metadata for, as
    /// `apply` would after reading none, without that read: the metadata is added first, where there
    /// is none, with the hash of the row the cells make, then the row is written. Returns false,
    /// having changed nothing, when the store holds metadata for the row or the cells do not make a
    /// row whose hash is known without reading it: `apply` merges it then.
    private mutating func startNew(key: [SQLValue], generation: Int64, cells: [Cell], into target: Target) throws
        -> Bool
    {
        guard var (_, metadata) = try newRow(key: key, generation: generation, cells: cells, in: target) else {
            return false
        }
        guard try target.metadata.saveNew(db, key: key, &metadata) else { return false }
        do {
            _ = try write(
                key: key, columns: cells.map { ($0.index, $0.value) }, upsert: true, into: target,
                metadata: &metadata, saved: true)
        } catch let refused as RefusedWrite {
            try target.metadata.takeBackNew(db, key: key, metadata)
            throw refused
        }
        return true
    }

    /// The whole row (values by column index) and the metadata that life `generation` starting
    /// with `cells` gives a row this store holds no metadata for; nil when the cells do not make
    /// the whole row or its hash is not known without reading it.
    private func newRow(key: [SQLValue], generation: Int64, cells: [Cell], in target: Target) throws
        -> (values: [SQLValue?], metadata: RowMetadata)?
    {
        let columnCount = target.table.columns.count
        guard key.count + cells.count == columnCount else { return nil }
        var values = [SQLValue?](repeating: nil, count: columnCount)
        var metadata = RowMetadata.unseen(columnCount: columnCount)
        metadata.generation = generation
        for (i, v) in zip(target.table.keyIndexes, key) { values[i] = v }
        for (i, value, clock) in cells {
            values[i] = value
            metadata.clocks[i] = clock
        }
        guard let hash = try target.rows.hash(writing: values) else { return nil }
        metadata.rowHash = hash
        return (values, metadata)
    }

    /// Takes the start of row life `generation` with `cells` into the batch of new rows, to be
    /// written with others of its table by one statement each for rows and metadata; returns false
    /// when it cannot be (see `newRow`; Tidemark's own tables are merged one row at a time).
    private mutating func batchNew(
        key: [SQLValue], generation: Int64, cells: [Cell], into target: Target, _ source: Source
    ) throws -> Bool {
        guard !replaying, !target.isInternal, target.refusedBatches < target.writtenBatches + 4,
            let (values, metadata) = try newRow(key: key, generation: generation, cells: cells, in: target)
        else { return false }
        if newRows.target !== target { try flushNewRows() }
        try newRows.add(db, key: key, values: values, metadata: metadata, into: target, source)
        if newRows.isFull { try flushNewRows() }
        return true
    }

    /// Writes the batch of new rows: the metadata of all in one statement, then the rows in
    /// another. Where either is refused (the store holds metadata for one after all, or a row
    /// breaks a constraint), it takes back what it wrote and merges each as `apply` does one at a
    /// time, which settles what the batch could not. Runs before anything else reads or writes the
    /// rows or metadata of a tracked table.
    mutating func flushNewRows() throws {
        guard let target = newRows.target else { return }
        let batch = newRows
        newRows = NewRowBatch()
        if batch.count > 1 {
            if try target.metadata.insertNew(db, batch.metadataValues, count: batch.count) {
                if try target.rows.insertNew(batch.rowValues, count: batch.count) {
                    target.metadata.noteNew(hashes: batch.hashes)
                    digests.noteMerged(target.table, existing: false)
                    target.writtenBatches += 1
                    return
                }
                try target.metadata.removeNew(db, batch.metadataValues, count: batch.count)
            }
            target.refusedBatches += 1
        }
        replaying = true
        defer { replaying = false }
        for source in batch.sources { try apply(source) }
    }

    /// Writes merged values without reading the row first: sets them, and when `upsert` inserts
    /// the row if it is absent, then saves `metadata` with the row's new hash (unless `saved`: it
    /// holds that hash and was saved already). Returns false when the row is absent and was not
    /// inserted (nothing is saved then). A constraint the merged row breaks throws `RefusedWrite`,
    /// having saved nothing, unless the engine is `settling` or the table is one of Tidemark's own;
    /// then the resolver settles it, and saves the metadata of the rows it deletes.
    private mutating func write(
        key: [SQLValue], columns: [(Int, SQLValue)], upsert: Bool, into target: Target, metadata: inout RowMetadata,
        saved: Bool = false
    ) throws -> Bool {
        let (table, store, access) = (target.table, target.metadata, target.rows)
        // Saved already only for a row new here (`startNew`), which no foreign-key action follows.
        digests.noteMerged(table, existing: !saved)
        var upsert = upsert
        var saved = saved
        // Read once, at the first broken constraint: a failed statement leaves the row as it was.
        var before: [SQLValue]?
        var readBefore = false
        for _ in 0..<8 {
            do {
                if upsert {
                    try access.write(key: key, columns: columns, isNew: saved)
                } else if try !access.update(key: key, columns: columns) {
                    return false
                }
                if saved { return true }
                metadata.rowHash = try access.hash(key: key, written: columns)
                try store.save(db, key: key, &metadata)
                return true
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                if !readBefore, !settling, !target.isInternal { throw RefusedWrite() }
                // Once the resolver has settled the constraint, the row is hashed again as written.
                saved = false
                if !readBefore {
                    before = try access.values(key: key)
                    readBefore = true
                    // The resolver reads this row's metadata as merged so far; the row is unchanged.
                    try store.save(db, key: key, &metadata)
                }
                var candidate = before ?? [SQLValue](repeating: .null, count: table.columns.count)
                for (i, v) in zip(table.keyIndexes, key) { candidate[i] = v }
                for (i, v) in columns { candidate[i] = v }
                // An action on a child may be what broke it (merge.md §5.6).
                if let before,
                    try settleActionClashes(
                        of: table, key: key, before: before, after: candidate,
                        clock: columns.compactMap { metadata.clocks[$0.0] }.max(), error: error)
                {
                    continue
                }
                let outcome = try resolver.resolve(
                    error, table: table, key: key, candidate: candidate, metadata: metadata)
                switch outcome {
                case .retry: if !upsert { upsert = try access.values(key: key) == nil }
                case .settled: return true
                }
            }
        }
        throw StoreError.database(path: "", message: "could not settle constraints on table '\(table.name)'")
    }
}
