import Foundation
import GRDB
import TidemarkCore

/// Applies a bundle inside the caller's write transaction as its decoder reads and verifies it:
/// writes the rows and records the transactions in history, with capture paused so
/// imported changes are not captured a second time as local ones. A record, chain or signature that
/// fails throws, and the caller's transaction rolls back.
struct BundleApplier {
    let db: Database
    let store: Store
    let context: ImportContext
    let path: String
    private let history: HistoryWriter
    private let translations: SchemaTranslations

    /// Whether the file is large enough that turning the connection's triggers off while it merges
    /// (`Store.withCapturePaused`) saves more than SQLite spends preparing the connection's
    /// statements again after: a trigger program per merged statement, against a few dozen
    /// statements prepared (BENCHMARKS.md, "An import fell from 0.50").
    private var isLarge: Bool {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.intValue ?? 0 >= 16_384
    }

    init(db: Database, store: Store, context: ImportContext, path: String) {
        self.db = db
        self.store = store
        self.context = context
        self.path = path
        history = HistoryWriter(db: db, registrations: store.registrations.all)
        translations = SchemaTranslations(
            naming: context.naming, current: context.lineage.count, tables: store.replicatedTables)
    }

    /// Applies the bundle's transactions (each through the merge rules, and recorded in history),
    /// then records what it says of each origin's chain, and closes the import.
    func apply(_ decoder: BundleDecoder) throws -> (Store.ImportSummary, VerifiedBundle) {
        try begin()
        var touched = Set<String>()
        try checkContinuity(decoder.header)
        translations.declare(decoder.header.tables)
        var applied = (transactions: 0, changes: 0)
        var skipped = 0
        var newest = HLCTimestamp.zero
        let started = try ReplicaState.fetch(db).lastTimestamp
        var engine = try MergeEngine(db: db, store: store) { max(started, newest) }
        try engine.discarded.sender(through: decoder.header.through)
        let (verified, changed) = try store.withCapturePaused(in: db, turningTriggersOff: isLarge) {
            let verified = try decode(decoder) {
                while let head = try decoder.nextTransaction() {
                    if head.sequence <= context.token[head.origin] {
                        try skipHeld(head, decoder)
                        skipped += 1
                        continue
                    }
                    applied.changes += try applyTransaction(head, decoder, engine: &engine, touched: &touched)
                    newest = max(newest, head.timestamp)
                    applied.transactions += 1
                }
            }
            try recordChains(verified)
            return (verified, try end(&engine, newest: newest, touched: touched))
        }
        let summary = Store.ImportSummary(
            path: path, sender: verified.header.senderName, appliedTransactions: applied.transactions,
            appliedChanges: applied.changes, skippedTransactions: skipped, header: verified.header,
            changedTables: changed)
        return (summary, verified)
    }

    /// Reads past a transaction this store holds. The last one it holds of an origin must chain
    /// to the same hash as its own copy (or else history forked); after a snapshot, that hash is
    /// where the store's history of the origin begins, and is learnt here.
    private func skipHeld(_ head: History.TransactionHeader, _ decoder: BundleDecoder) throws {
        while try decoder.nextChange() != nil {}
        let known = context.token[head.origin]
        guard head.sequence == known, let chain = decoder.lastCompleted?.chainHash else { return }
        if let stored = context.heads[head.origin]?.1 {
            guard chain == stored else {
                throw ExchangeError.historyFork(path: path, origin: head.origin.description, sequence: head.sequence)
            }
        } else {
            try Chains(db: db, store: store).learnPrunedHead(chain, origin: head.origin, prunedThrough: known)
        }
    }

    /// Merges a transaction's changes (Protocol/merge.md §4) and records it in history; returns
    /// how many changes it had.
    private func applyTransaction(
        _ head: History.TransactionHeader, _ decoder: BundleDecoder, engine: inout MergeEngine,
        touched: inout Set<String>
    ) throws -> Int {
        var first: Int64?
        var last = try Int64.fetchOne(db, sql: "SELECT max(id) FROM tidemark_changes") ?? 0
        var count = 0
        let clock = Sealer.Authorship.clock(
            author: head.author, contextName: head.contextName, timestamp: head.timestamp, origin: head.origin)
        let isResolution = head.author == Self.systemAuthor && head.contextName == Self.systemContext
        while let change = try decoder.nextChange() {
            // Named as the transaction's version names it; merged under today's names.
            let translation = try translations.translation(of: change.table, at: head.schemaPosition, path: path)
            if let current = try translation.current(change, path: path) {
                // Listed before merging: a resolution is listed as such, not as the edits it discarded.
                if isResolution && current.type == .delete {
                    try engine.flushNewRows()
                    try engine.resolver.record(
                        current, kind: .remote, detail: "resolved by replica \(head.origin.short)", origin: head.origin)
                }
                try engine.apply(current, clock: clock)
                touched.insert(current.table)
            }
            last += 1
            try history.record(change, as: translation, id: last)
            if first == nil { first = last }
            count += 1
        }
        // Before the clock moves past this transaction: what a batch or a deferred row settles is
        // noted at its time.
        try engine.settleDeferred()
        try history.flush()
        try HistoryWriter.recordTransaction(
            db, origin: head.origin, sequence: head.sequence, timestamp: head.timestamp,
            authorship: .init(author: head.author, contextName: head.contextName, processID: head.processID),
            changes: first ?? last + 1, through: last, chain: decoder.lastCompleted!.chainHash,
            schemaPosition: head.schemaPosition)
        return count
    }

    /// Records what the verified bundle says of each origin's chain: where this store's history of
    /// it begins after a snapshot, and its attested head.
    private func recordChains(_ verified: VerifiedBundle) throws {
        let chains = Chains(db: db, store: store)
        for range in verified.header.ranges where range.first - 1 == context.token[range.origin] && range.first > 1 {
            // After a snapshot this store lacks the chain hash where its copy of the origin's history
            // begins; the range's `previous` is that hash, vouched for by the origin's attestation.
            try chains.learnPrunedHead(range.previous, origin: range.origin, prunedThrough: range.first - 1)
        }
        for (range, attestation) in zip(verified.header.ranges, verified.attestations)
        where range.last > context.token[range.origin] {
            try chains.recordAttestedHead(
                origin: range.origin, last: range.last, publicKey: range.publicKey, attestation: attestation)
        }
    }

    /// Opens an import: local writes join row metadata before anything merges against it, and
    /// foreign-key checks wait for the end. The merge then runs with capture paused.
    private func begin() throws {
        try LocalFold(db: db, store: store).run()
        try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
    }

    /// Reads the rest of the file with `body`, then verifies the whole of it.
    private func decode(_ decoder: BundleDecoder, _ body: () throws -> Void) throws -> VerifiedBundle {
        do {
            try body()
            return try decoder.finish()
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
    }

    /// Closes an import: the hybrid logical clock moves past every imported timestamp (so later
    /// local writes order after them), orphans are settled, resolutions sealed, and the
    /// connection's transaction observers (GRDB's `ValueObservation` and
    /// `DatabaseRegionObservation`) told which tables changed. Returns those user tables.
    private func end(_ engine: inout MergeEngine, newest: HLCTimestamp, touched: Set<String>) throws -> Set<String> {
        try engine.flushNewRows()
        try ReplicaState.advance(to: newest, db)
        // Read once for all three: orphans are looked for, and digests forgotten, where the app's
        // triggers reached, and observers hear of it.
        let appTriggers = touched.isEmpty && engine.resolver.deletes.isEmpty ? [:] : try AppTriggers.targets(db)
        try engine.resolver.settleOrphans(appTriggers: appTriggers)
        let actionUpdates = try engine.settleActionEffects()
        let written = touched.union(engine.resolver.deletes.map(\.table))
        try engine.digests.flush(
            tables: store.replicatedTables, appTriggers: appTriggers,
            actionParents: engine.resolver.foreignKeys.actionParents)
        try sealResolutions(engine.resolver.deletes)
        try sealActionUpdates(actionUpdates)
        let changed = try ChangedTables.closing(written, appTriggers: appTriggers, in: db)
        // Rows were written through raw statements, which GRDB's observation does not see.
        try ChangedTables.notify(changed, in: db)
        return changed.filter { !$0.hasPrefix(Bookkeeping.prefix) }
    }

    /// Refuses a range that does not continue this store's copy of its origin's chain: the hash it
    /// claims before its first transaction must be the one held here (Protocol/exchange.md §4.4).
    private func checkContinuity(_ header: BundleHeader) throws {
        for range in header.ranges where range.first > 1 && range.first - 1 <= context.token[range.origin] {
            let held =
                range.origin == store.replica.id
                ? try Chains(db: db, store: store).own(through: range.first - 1)
                : try Chains(db: db, store: store).held(range.origin, after: range.first - 1)
            if let held, held != range.previous {
                throw ExchangeError.historyFork(path: path, origin: range.origin.description, sequence: range.first - 1)
            }
        }
    }

    /// Applies a verified snapshot: merges every row state, and moves this store's token to the
    /// snapshot's, marking the history it skipped as pruned (it is not available here).
    func applySnapshot(_ decoder: BundleDecoder) throws -> (Store.ImportSummary, VerifiedBundle) {
        try begin()
        var touched = Set<String>()
        // The sender's clock passed every transaction the snapshot covers, whether or not a row
        // still carries its timestamp: so does this store's (exchange.md §4.4 relies on it).
        var newest = decoder.header.created
        let started = try ReplicaState.fetch(db).lastTimestamp
        // A conflict is noted at this store's clock as the snapshot leaves it, not at the clock of a
        // store that never wrote (1970).
        let detected = max(started, decoder.header.created)
        var engine = try MergeEngine(db: db, store: store) { detected }
        try engine.discarded.sender(through: decoder.header.through)
        var rows = 0
        var liveRows = 0
        // Derived from the sender's key by a hash: once, not per row.
        let sender = decoder.sender
        let (verified, changed) = try store.withCapturePaused(in: db, turningTriggersOff: isLarge) {
            // The floors the sender declares, by this store's tables.
            let floors: [(TrackedTable, Int64)] = decoder.header.floors.compactMap { floor in
                let position = decoder.header.lineage.count
                guard let table = try? translations.translation(of: floor.table, at: position, path: path).table
                else { return nil }
                return (table, floor.floor)
            }
            var forgotten = try ForgottenRows(
                db: db, own: store.replica.id, through: decoder.header.through, floors: floors)
            let verified = try decode(decoder) {
                let position = decoder.header.lineage.count
                // The table of the row state before: most follow one of the same table.
                var last: (name: String, target: MergeEngine.Target?)?
                while let state = try decoder.nextRowState() {
                    // Row states are named as the sender's newest version names them.
                    guard
                        let state = try translations.translation(of: state.table, at: position, path: path).current(
                            state)
                    else { continue }
                    try engine.apply(state, from: sender)
                    if last?.name != state.table {
                        last = (state.table, engine.targets[state.table])
                        touched.insert(state.table)
                    }
                    if let target = last?.target { try forgotten.note(target, key: state.key) }
                    for cell in state.cells {
                        if let clock = cell.clock { newest = max(newest, clock.timestamp) }
                    }
                    rows += 1
                    if state.generation % 2 == 1 && !state.table.hasPrefix(Bookkeeping.prefix) { liveRows += 1 }
                }
                // What the rows themselves refuse is reported before the file's last checks.
                try engine.flushNewRows()
            }
            // Rows the sender saw deleted and then forgot are deleted here too.
            touched.formUnion(try forgotten.settle(&engine, sender: sender))
            // Rows whose write was refused, now that every row state is in and forgotten rows gone.
            try engine.settleDeferred()
            // Lives this store starts where the sender dropped tombstones must outrank them too.
            for (table, floor) in floors { try Tombstones(db: db).raiseFloor(of: table.id, to: floor) }
            try skipHistory(through: verified.header.through)
            return (verified, try end(&engine, newest: newest, touched: touched))
        }
        var summary = Store.ImportSummary(
            path: path, sender: verified.header.senderName, appliedTransactions: 0, appliedChanges: rows,
            skippedTransactions: 0, header: verified.header, changedTables: changed)
        summary.snapshotRows = liveRows
        return (summary, verified)
    }

    /// Moves this store's token to a snapshot's `through`, marking the history it skipped as
    /// pruned (it is not available here).
    private func skipHistory(through: History.Token) throws {
        for (origin, sequence) in through.sequences where sequence > context.token[origin] {
            // What this store held of the origin's history up to there is now below its pruned
            // point, with the transactions after it missing: it goes, as a prune would remove it.
            _ = try HistoryPruner(db: db, store: store).deleteTransactions(of: origin, through: sequence)
            try db.execute(
                sql: """
                    INSERT INTO tidemark_replicas(replica, max_seq, pruned_through) VALUES (?, ?, ?)
                    ON CONFLICT(replica) DO UPDATE SET max_seq = excluded.max_seq, pruned_through = excluded.pruned_through
                    """,
                arguments: [origin, sequence, sequence])
            try Chains(db: db, store: store).forgetHeads(of: origin)
        }
        try HistoryPruner(db: db, store: store).keepChangeIDsIncreasing()
    }

    /// The author and context name of the transactions that record conflict resolutions.
    static let systemAuthor = "tidemark"
    static let systemContext = "conflict"
    /// The context name of the transactions that record what foreign-key actions changed.
    static let actionContext = "action"

    /// Seals the columns the app's foreign-key actions changed behind the merge as one transaction
    /// of this replica (`MergeEngine.settleActionEffects`), and folds it, as a write of this
    /// replica's own made now.
    private func sealActionUpdates(_ updates: [History.Change]) throws {
        guard try sealOwn(updates, contextName: Self.actionContext) != nil else { return }
        try LocalFold(db: db, store: store).run()
    }

    /// Records `changes` as one transaction of this replica, with author `tidemark` and
    /// `contextName`, after what the import recorded; nil when there are none.
    private func sealOwn(_ changes: [History.Change], contextName: String) throws -> Sealer.Sealed? {
        guard !changes.isEmpty else { return nil }
        var last = try Sealer.lastChangeID(db)
        for change in changes {
            last += 1
            try history.record(
                change, as: try translations.translation(of: change.table, at: context.lineage.count, path: path),
                id: last)
        }
        try history.flush()
        return try Sealer.seal(
            db, replica: store.replica.id, clock: store.options.clock,
            as: .init(author: Self.systemAuthor, contextName: contextName, processID: store.options.processID))
    }

    /// Seals the resolver's system deletes as one transaction of this replica, already folded
    /// (their row metadata was written as they were made).
    private func sealResolutions(_ deletes: [History.Change]) throws {
        // Imported changes belong to their transactions already; what follows is this replica's own.
        try ReplicaState.setSealedThrough(try Sealer.lastChangeID(db), db)
        if let sealed = try sealOwn(deletes, contextName: Self.systemContext) {
            try ReplicaState.setFolded(through: sealed.sequence, db)
        }
    }
}
