import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// What a prune removed, or would remove with `dryRun`.
    public struct PruneReport: Sendable {
        /// The common watermark: what every active member has applied. History it covers is removed.
        public var horizon: History.Token
        /// History transactions removed.
        public var removedTransactions: Int
        /// This replica's own exchange files removed (bundles every active member applied).
        public var removedFiles: [String]
        /// Snapshots written (with `dryRun`, that would be written) so that members who come back, or
        /// join, can catch up: none for a folder where a snapshot already held what the prune removed
        /// there.
        public var snapshots: [String]
        /// Active members whose watermark holds history back, by name.
        public var blockers: [String]
        /// Members retired by the `maxLag` policy in this run.
        public var retired: [String]
        /// Tombstones removed: deleted rows whose delete every member, retired ones too, has applied
        /// (Protocol/pruning.md §6).
        public var droppedTombstones: Int = 0
        /// Whether nothing was changed.
        public var dryRun: Bool
        /// Exchange folders this replica pushed to that hold back the pruning of its own history:
        /// its latest transactions are not in a bundle there yet (a push there lets them go).
        public var heldBackByFolders: [String] = []
        /// Exchange folders that could not be reached, and own files that could not be removed,
        /// each with the reason: they stay as they are until a later prune.
        public var warnings: [String] = []
    }

    /// The common-watermark cleaner: removes the history every active member's watermark covers,
    /// and this replica's own bundles in the exchange folders it uses that every active member has
    /// applied, once a snapshot of that folder holds them (writing its own first when none does,
    /// Protocol/pruning.md §3.3). It never removes what an active member still lacks; a member
    /// that never left a watermark counts as having applied nothing. With `maxLag`, members whose
    /// last watermark is older than that are retired first.
    /// Exchange folders on a server are reached with `settings`; one that cannot be reached keeps
    /// its files until a later prune.
    public func prune(
        dryRun: Bool = false, maxLag: TimeInterval? = nil, key: KeyFile?, settings: ExchangeSettings = .init()
    ) throws -> PruneReport {
        // Its own bundles may be all that holds the transactions its restored store lacks.
        try checkNotRestored()
        let retired = try maxLag.map { try retireLagging(by: $0, dryRun: dryRun) } ?? []
        let members = try members()
        let own = members.first(where: \.isSelf)!
        var horizon = own.watermark
        var blockers: [String] = []
        for member in members where !member.isSelf && !member.retired && !retired.contains(member.name) {
            horizon = horizon.meet(member.watermark)
            if !member.watermark.covers(own.watermark) { blockers.append(member.name) }
        }
        // Never delete this replica's own transactions before they are in a bundle in every
        // exchange folder it pushes to: members away or not yet joined still need them there. (A
        // folder only pulled from gets none of them from this replica anyway; should it push
        // there later, a member that lacks them gets its snapshot, pruning.md §3.5.)
        let pushedTo = try exchangeFolders().compactMap { folder in try pushedThrough(folder).map { (folder, $0) } }
        var heldBackByFolders: [String] = []
        for (folder, through) in pushedTo {
            let pushed = through[replica.id]
            if pushed < horizon[replica.id], pushed < own.watermark[replica.id] { heldBackByFolders.append(folder) }
            horizon[replica.id] = min(horizon[replica.id], pushed)
        }
        let removed = dryRun ? try transactionCount(coveredBy: horizon) : try deleteHistory(before: horizon)
        let dropped = try dropTombstones(dryRun: dryRun)
        var report = PruneReport(
            horizon: horizon, removedTransactions: removed, removedFiles: [], snapshots: [], blockers: blockers,
            retired: retired, droppedTombstones: dropped, dryRun: dryRun, heldBackByFolders: heldBackByFolders)
        // Own bundles are only in folders this replica pushed to: the others are not read.
        for (location, _) in pushedTo {
            try removeOwnBundles(in: location, coveredBy: horizon, key: key, settings: settings, into: &report)
        }
        return report
    }

    /// Removes this replica's own bundles at `location` that `horizon` covers, once a snapshot of
    /// the folder holds what they held (writing this replica's own first when none does), and
    /// notes in `report` what it removed and wrote, or with a dry run would.
    private func removeOwnBundles(
        in location: String, coveredBy horizon: History.Token, key: KeyFile?, settings: ExchangeSettings,
        into report: inout PruneReport
    ) throws {
        let dryRun = report.dryRun
        let transport: any ExchangeTransport
        let bundles: [(number: Int, file: ExchangeFolder.File)]
        do {
            transport = try ExchangeLocation.transport(for: location, settings: settings)
            bundles = try ExchangeFolder(transport).bundles(of: replica.id)
        } catch {
            report.warnings.append("\(Self.reason(error, at: location)); its files there are left as they are")
            return
        }
        defer { transport.close() }
        let exchange = ExchangeFolder(transport)
        // A restored older copy must not remove what its later self published.
        if let key {
            try checkUnrecordedOwnBundles(bundles, in: exchange, recorded: location, key: key, dryRun: dryRun)
        }
        let mine = replica.id.description
        let done = bundles.compactMap { bundle in
            (try? exchange.header(of: bundle.file, identity: key?.envelopeIdentity)).flatMap {
                horizon.covers($0.header.through) ? (file: bundle.file, through: $0.header.through) : nil
            }
        }
        guard !done.isEmpty, let key else { return }
        // Anyone who still needs what these bundles held catches up from a snapshot of the
        // folder: one that holds it already, or this replica's, written now.
        let held = done.reduce(History.Token.zero) { $0.merged(with: $1.through) }
        if try !folderSnapshots(in: exchange, key: key).cover(held, lineage: try lineage()) {
            if dryRun {
                report.snapshots.append(transport.address(of: ExchangeFolder.snapshotName, in: mine))
            } else {
                // Kept until this replica can write a snapshot that holds them.
                guard let written = try publishSnapshot(through: transport, recorded: location, key: key)
                else { return }
                report.snapshots.append(written)
            }
        }
        for bundle in done {
            do {
                if !dryRun { try transport.remove(bundle.file.name, in: mine) }
                report.removedFiles.append(exchange.address(of: bundle.file))
            } catch {
                let address = exchange.address(of: bundle.file)
                report.warnings.append(
                    "\(Self.reason(error, at: address)); the bundle stays, and a later prune removes it")
            }
        }
    }

    /// An error as a prune's warning gives it: naming `place`, which most errors of a transport
    /// name already.
    private static func reason(_ error: any Error, at place: String) -> String {
        let text = "\(error)"
        return text.contains(place) ? text : "\(place): \(text)"
    }

    /// Drops the tombstones of deletes that every member, retired ones too, has applied, once this
    /// replica holds everything each member held when it signed its watermark: a write a member
    /// made before it applied a delete has then met the tombstone here (Protocol/pruning.md §6.2).
    /// The members and their watermarks are read in the transaction that drops, so a peer trusted
    /// meanwhile counts. Returns how many were dropped, or with `dryRun` would be.
    private func dropTombstones(dryRun: Bool) throws -> Int {
        try mappingErrors {
            if dryRun {
                return try database.read { db in
                    let own = try Self.currentToken(db)
                    guard let horizon = try Self.tombstoneHorizon(own: own, db) else { return 0 }
                    let tombstones = Tombstones(db: db)
                    // The real run first closes the open epoch at the token this replica holds.
                    let epoch =
                        horizon.covers(own)
                        ? try Tombstones.openEpoch(db) : try tombstones.lastEpoch(coveredBy: horizon)
                    return try tombstones.drop(through: epoch, tables: replicatedTables, dryRun: true)
                }
            }
            return try writeImmediately { db in
                let own = try Self.currentToken(db)
                let tombstones = Tombstones(db: db)
                try tombstones.closeEpoch(at: own)
                guard let horizon = try Self.tombstoneHorizon(own: own, db) else { return 0 }
                return try tombstones.drop(
                    through: try tombstones.lastEpoch(coveredBy: horizon), tables: replicatedTables)
            }
        }
    }

    /// The meet of every member's watermark, retired members included, or nil while `own` does
    /// not cover one of them (pruning.md §6.2).
    private static func tombstoneHorizon(own: History.Token, _ db: Database) throws -> History.Token? {
        var horizon = own
        for peer in try peers(db) {
            let watermark = try knownToken(of: peer.id, db)
            guard own.covers(watermark) else { return nil }
            horizon = horizon.meet(watermark)
        }
        return horizon
    }

    /// Retires the members whose last watermark is older than `maxLag` seconds (without changing
    /// anything when `dryRun`); returns their names.
    private func retireLagging(by maxLag: TimeInterval, dryRun: Bool) throws -> [String] {
        var retired: [String] = []
        let now = HLCTimestamp(milliseconds: options.clock.nowMilliseconds(), counter: 0)
        // A member that never signed a watermark lags from when this replica began trusting it;
        // when that is not known (a store read-only and not upgraded, a peer an earlier build
        // added), from the first prune that asks.
        let trusted: [String: Int64] =
            (try? database.read { db in
                try Dictionary(
                    Row.fetchAll(db, sql: "SELECT name, added_at FROM tidemark_peers WHERE added_at IS NOT NULL").map {
                        ($0[0], $0[1])
                    }, uniquingKeysWith: { first, _ in first })
            }) ?? [:]
        var unknown: [String] = []
        for member in try members() where !member.isSelf && !member.retired {
            guard let last = member.signedAt?.milliseconds ?? trusted[member.name] else {
                unknown.append(member.name)
                continue
            }
            if Double(now.milliseconds - last) / 1000 > maxLag {
                if !dryRun { try retire(peer: member.name) }
                retired.append(member.name)
            }
        }
        if !dryRun && !unknown.isEmpty {
            _ = try? database.write { db in
                for name in unknown {
                    try db.execute(
                        sql: "UPDATE tidemark_peers SET added_at = ? WHERE name = ? AND added_at IS NULL",
                        arguments: [now.milliseconds, name])
                }
            }
        }
        return retired
    }

    /// How many history transactions `horizon` covers: what a prune to it would remove.
    private func transactionCount(coveredBy horizon: History.Token) throws -> Int {
        try mappingErrors {
            try database.read { db in
                var count = 0
                for row in try Row.fetchAll(db, sql: "SELECT replica, pruned_through FROM tidemark_replicas") {
                    let origin = try row.decode(Replica.ID.self, atIndex: 0)
                    count +=
                        try Int.fetchOne(
                            db, sql: "SELECT count(*) FROM tidemark_transactions WHERE replica = ? AND seq <= ?",
                            arguments: [row[0], horizon[origin]]) ?? 0
                }
                return count
            }
        }
    }
}
