import Crypto
import Foundation
import TidemarkCore

extension Store {
    /// What a pull did.
    public struct PullSummary: Sendable {
        /// Bundles applied, in order (snapshots included).
        public var imported: [ImportSummary]
        /// Files skipped with the reason. Most are retried on the next pull; junk (a damaged file,
        /// or one that is not an exchange file) is reported once while it is unchanged.
        public var warnings: [String]
        /// The watermark file written.
        public var watermark: String
        /// The automatic prune that followed, if enabled.
        public var prune: PruneReport?
        /// Schema versions that bundles held in the store (this pull's or earlier ones') wait for:
        /// make the same migration, then pull again.
        public var waiting: [SchemaWait] = []
        /// Bytes fetched from the server of a WebDAV exchange folder (none from a local folder).
        public var bytesDownloaded: Int64 = 0
        /// Schema versions taken on from the members' files before applying them (a store created
        /// from the app's newer schema, Protocol/schema.md §5); those an import took on are in
        /// its summary.
        public var adoptedVersions: [Schema.Version] = []
        /// Files removed from this replica's own subfolder, each as `address: why`: abandoned
        /// temporaries, and copies of its files that a sync tool made.
        public var removed: [String] = []
        /// The user tables whose rows the pull changed (every import's `changedTables`).
        public var changedTables: Set<String> { imported.reduce(into: []) { $0.formUnion($1.changedTables) } }
    }

    /// Applies every bundle in the peers' subfolders of `location` (a folder, or a WebDAV
    /// collection's URL) that this store lacks, in an order that satisfies their prerequisites. A
    /// partial, untrusted or unreachable file is reported in `warnings` and retried next time; a
    /// damaged one, or one that is not an exchange file, is reported once while it is unchanged.
    /// Neither stops the others. When bundles this store needs were pruned away, it
    /// catches up from a peer's snapshot. Then it writes this replica's signed watermark into its
    /// own subfolder and, unless `prune` is false, prunes; a failure there, once bundles were
    /// applied, is thrown as `PullFailedAfterApplying`, which says what was applied.
    public func pull(
        from location: String, key: KeyFile, prune autoPrune: Bool = true, settings: ExchangeSettings = .init()
    ) throws -> PullSummary {
        try checkNotRestored()
        let (exchange, recorded) = try openExchange(location, settings: settings)
        defer { exchange.transport.close() }
        var sources = PullSources(exchange: exchange, recorded: recorded)
        var failures = PullFailures()
        try list(exchange, into: &sources, failures: &failures)
        // Bundles held for a schema version: they go with the folder's, and apply once the store has it.
        let held = try HeldCopies(store: self)
        defer { held.remove() }
        var imported: [ImportSummary] = []
        // A store created from the app's newer schema takes on the versions the members have made
        // before it applies a file written before them: such a file names the tables as they were,
        // and a name a later version gave another column would put its values there. Only before
        // its first pull: one that applied the group's files since has the group's first schema.
        var adopted: [Schema.Version] = []
        if !sources.order.isEmpty, try lineage().isEmpty,
            try currentToken().sequences.keys.allSatisfy({ $0 == replica.id })
        {
            let usable = try withoutJudgedJunk(sources.order, from: sources, failures: &failures)
            adopted = try takeOnFolderVersions(
                in: exchange, key: key, skipping: Set(sources.order).subtracting(usable))
        }
        var pending = try applyCatchingUp(
            held.paths + sources.order, from: sources, imported: &imported, failures: &failures, held: held, key: key)
        // Files older than the tables of a store created from the app's newer schema apply once
        // it takes on the versions the folder's members have made.
        if failures.namedUnknownSchema, case let more = try takeOnFolderVersions(in: exchange, key: key), !more.isEmpty
        {
            adopted += more
            pending = try applyCatchingUp(
                held.paths + sources.order, from: sources, imported: &imported, failures: &failures, held: held,
                key: key)
        }
        return try afterApplying(imported) {
            try clearWaitingOnHeld(pending, from: sources, failures: &failures, key: key)
            var listed = Set(sources.order)
            let watermarks = try readWatermarks(in: exchange, recorded: recorded, failures: &failures, key: key)
            listed.formUnion(watermarks.listed)
            // Snapshots' tokens too, this replica's own included: read once while unchanged.
            listed.formUnion(
                try (exchange.replicaFolders(except: replica.id) + [replica.id]).map {
                    exchange.address(of: ExchangeFolder.File(replica: $0, name: ExchangeFolder.snapshotName))
                })
            // A peer's file showed this store to be an older copy: nothing more is published from
            // it, its watermark included.
            try checkNotRestored()
            try mappingErrors {
                try database.write { db in try RemoteFiles.keepOnly(db, location: recorded, files: listed) }
            }
            try rejoinIfRetired()
            let warnings = try warnings(for: failures, sources: sources)
            try exchange.transport.createFolder(self.replica.id.description)
            let tidy = try tidyOwnFolder(exchange, recorded: recorded, key: key, checkPublished: false)
            let watermark = try writeWatermark(in: exchange, key: key)
            // Best effort: a relay that cannot be written now is written by the next pull.
            try? relayWatermarks(in: exchange, found: watermarks)
            // What this replica wrote in clear before it learned that the group encrypts (its
            // snapshot holds every row): a member that only pulls replaces it too. A file that
            // cannot be replaced now is tried again by the next push or pull.
            _ = try? encryptOwnClearFiles(in: exchange, recorded: recorded, key: key)
            let report = autoPrune ? try prune(key: key, settings: settings) : nil
            return PullSummary(
                imported: imported, warnings: tidy.kept + warnings, watermark: watermark, prune: report,
                waiting: try schemaWaits(), bytesDownloaded: exchange.transport.bytesDownloaded,
                adoptedVersions: adopted, removed: tidy.removed)
        }
    }

    /// Lists every peer's folder: its bundles into `sources`, and its temporaries and anything that
    /// is not an exchange file into `failures`.
    private func list(_ exchange: ExchangeFolder, into sources: inout PullSources, failures: inout PullFailures)
        throws
    {
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            for entry in try exchange.transport.files(in: replica.description) { sources.list(entry, of: replica) }
            for bundle in try exchange.bundleEntries(of: replica) {
                sources.add(bundle.file, validator: bundle.validator)
            }
            for (file, abandoned) in try exchange.strayFiles(of: replica) {
                let address = exchange.address(of: file)
                if !file.name.hasPrefix(ExchangeFolder.temporaryPrefix) {
                    let owner =
                        ExchangeFolder.hasExchangeExtension(file.name)
                        ? "its replica removes it unless it needs it" : "left alone"
                    failures.recordJunk("\(address): not a Tidemark exchange file; \(owner)", at: address)
                } else if abandoned {
                    failures.recordJunk(
                        "\(address): left by an interrupted write of its sender, which removes it on its next push or pull",
                        at: address)
                } else {
                    failures[address] = "\(address): still being written by its sender"
                }
            }
        }
    }

    /// Applies `addresses` (`applyBundles`); when a peer's bundles cannot be followed (pruned away
    /// before this store applied them), catches up from that peer's snapshot and applies again.
    /// Returns the bundles that still miss prerequisites.
    private func applyCatchingUp(
        _ addresses: [String], from sources: PullSources, imported: inout [ImportSummary],
        failures: inout PullFailures, held: HeldCopies, key: KeyFile
    ) throws -> [String] {
        let exchange = sources.exchange
        var pending = addresses
        var usedSnapshots = Set<ExchangeFolder.File>()
        while true {
            let blocked: [Replica.ID: History.Token]
            (pending, blocked) = try applyBundles(
                pending, from: sources, imported: &imported, failures: &failures, held: held, key: key)
            guard
                let snapshot = try snapshotToCatchUp(
                    in: exchange, recorded: sources.recorded, excluding: usedSnapshots, blocked: blocked,
                    failures: &failures, key: key)
            else { return pending }
            usedSnapshots.insert(snapshot)
            let address = exchange.address(of: snapshot)
            var local = address
            do {
                local = try exchange.localPath(of: snapshot)
                let summary = try importBundle(at: local, key: key, cameEncrypted: nil)
                if !summary.alreadyApplied { imported.append(summary) }
                failures[address] = nil
            } catch let error as ExchangeError {
                try noteIfRestored(error)
                failures.record(error, reading: local, as: address)
            }
        }
    }

    /// A bundle that builds on held changes (directly, or through other such bundles) waits for
    /// the same migration as they do: that is what `waiting` reports, not a problem with it.
    private func clearWaitingOnHeld(
        _ pending: [String], from sources: PullSources, failures: inout PullFailures, key: KeyFile
    ) throws {
        guard !pending.isEmpty else { return }
        var reach = try mappingErrors {
            try database.read { db in try HeldBundles.reach(from: Store.currentToken(db), db) }
        }
        var left = pending.compactMap { address in
            (try? sources.header(of: address, identity: key.envelopeIdentity)).map { (address, $0.1) }
        }
        var progress = true
        while progress {
            progress = false
            for (address, header) in left {
                guard reach.covers(header.prerequisites) else { continue }
                failures[address] = nil
                reach = reach.merged(with: header.through)
                left.removeAll { $0.0 == address }
                progress = true
            }
        }
    }

    /// Applies what it can of `addresses`, repeating while progress is made; returns the bundles
    /// that still miss prerequisites, and what those assume, by the folder they are in.
    private func applyBundles(
        _ addresses: [String], from sources: PullSources, imported: inout [ImportSummary],
        failures: inout PullFailures, held: HeldCopies, key: KeyFile
    ) throws -> (pending: [String], blocked: [Replica.ID: History.Token]) {
        var pending = try withoutJudgedJunk(addresses, from: sources, failures: &failures)
        var blocked: [Replica.ID: History.Token] = [:]
        var progress = true
        while progress && !pending.isEmpty {
            progress = false
            var waiting: [String] = []
            blocked = [:]
            let token = try currentToken()
            for address in pending {
                var local = address
                var prerequisites = History.Token.zero
                do {
                    switch try applyBundle(
                        address, token: token, from: sources, held: held, key: key, local: &local,
                        prerequisites: &prerequisites)
                    {
                    case .refused(let message):
                        failures[address] = message
                    case .applied(let summary):
                        if !summary.alreadyApplied { imported.append(summary) }
                        progress = true
                        failures[address] = nil
                    case .nothingToApply:
                        failures[address] = nil
                    }
                } catch let error as ExchangeError {
                    try noteIfRestored(error)
                    var missing: Set<Replica.ID> = []
                    if case .missingPrerequisites = error {
                        waiting.append(address)
                        if let folder = sources.listed[address]?.file.replica {
                            blocked[folder, default: .zero] = blocked[folder, default: .zero].merged(
                                with: prerequisites)
                        }
                        missing = Set(prerequisites.sequences.filter { token[$0.key] < $0.value }.map(\.key))
                    }
                    failures.record(error, reading: local, as: address, missing: missing)
                }
            }
            pending = waiting
        }
        return (pending, blocked)
    }

    /// What became of one bundle of a pull.
    private enum BundleOutcome {
        /// Applied, or found applied already.
        case applied(ImportSummary)
        /// Nothing in it the store lacks, or held until the store migrates.
        case nothingToApply
        /// Not a file a pull applies, for the reason given.
        case refused(String)
    }

    /// Applies the bundle at `address` unless the store (holding `token`) already has what it holds.
    /// Sets `local` to the file read and `prerequisites` to what it assumes, for the caller's report
    /// when it throws.
    private func applyBundle(
        _ address: String, token: History.Token, from sources: PullSources, held: HeldCopies, key: KeyFile,
        local: inout String, prerequisites: inout History.Token
    ) throws -> BundleOutcome {
        // Read in an earlier pull, unchanged since, and nothing this store lacks.
        if let validator = sources.validator(of: address),
            let known = try remoteThrough(sources.recorded, address, validator: validator),
            token.covers(known)
        {
            return .nothingToApply
        }
        let (_, header, encrypted) = try sources.header(of: address, identity: key.envelopeIdentity)
        prerequisites = header.prerequisites
        if let validator = sources.validator(of: address) {
            try rememberRemote(sources.recorded, address, validator: validator, through: header.through)
        }
        guard header.kind == .changes || held.holds(address) else {
            return .refused("\(address): a numbered bundle must be a change bundle")
        }
        if token.covers(header.through) {
            // Nothing to apply, but a downgraded copy is still reported.
            try mappingErrors {
                try database.read { db in
                    try Self.checkNotDowngraded(
                        db, header: header, encrypted: held.cameEncrypted(address) ?? encrypted, path: address)
                }
            }
            try held.release(address)
            return .nothingToApply
        }
        local = try sources.localPath(of: address)
        let summary = try importBundle(at: local, key: key, cameEncrypted: held.cameEncrypted(address))
        return summary.waitingFor != nil ? .nothingToApply : .applied(summary)
    }

    /// `addresses` without the junk reported before and unchanged since (it cannot have become
    /// usable), which is recorded again as failures without being read.
    private func withoutJudgedJunk(
        _ addresses: [String], from sources: PullSources, failures: inout PullFailures
    ) throws -> [String] {
        try addresses.filter { address in
            guard let (file, fingerprint) = sources.listed[address], let fingerprint,
                let verdict = try checkedVerdict(sources.recorded, file.replica.description, file.name, fingerprint),
                !verdict.hasPrefix(CheckedFiles.waiting)
            else { return true }
            failures.recordJunk(verdict, at: address)
            return false
        }
    }

    /// A peer's snapshot this store needs: one that holds something the store lacks, from a peer
    /// whose remaining bundles do not start where the store's history of that peer's folder ends,
    /// or whose bundles wait for what no file here provides and the snapshot holds (`blocked`, by
    /// folder: the peer then wrote the snapshot to hold it, Protocol/pruning.md §5.4), or whose
    /// snapshot holds another origin's transactions that that origin's own files do not provide
    /// (`holdsUnpublished`).
    private func snapshotToCatchUp(
        in exchange: ExchangeFolder, recorded: String, excluding used: Set<ExchangeFolder.File>,
        blocked: [Replica.ID: History.Token], failures: inout PullFailures, key: KeyFile
    ) throws -> ExchangeFolder.File? {
        let token = try currentToken()
        var best: (ExchangeFolder.File, History.Token)?
        var published: [Replica.ID: Int64]?
        /// Whether a snapshot of `sender` reaching `through` holds another origin's transactions
        /// this store lacks and that origin's own files (its snapshot, and its bundles from there)
        /// do not provide: the sender holds them as row state only (that origin sent it a snapshot
        /// directly), or that origin removed the bundles that held them without writing a
        /// snapshot, since this one held them (pruning.md §3.3). They reach readers through a
        /// snapshot that holds them or not at all (Protocol/pruning.md §5.4).
        func holdsUnpublished(_ through: History.Token, of sender: Replica.ID) throws -> Bool {
            let lacking = through.sequences.filter { origin, position in
                origin != self.replica.id && origin != sender && position > token[origin]
            }
            guard !lacking.isEmpty else { return false }
            if published == nil {
                published = try publishedByOrigins(in: exchange, key: key, ownSnapshots: true).provided
            }
            return lacking.contains { origin, position in position > published?[origin] ?? 0 }
        }
        // This replica's own snapshot too: a store restored from a backup may lack what it holds, and
        // the others may have removed bundles because it held them (Protocol/pruning.md §3.4, §5.4).
        for replica in try exchange.replicaFolders(except: self.replica.id) + [self.replica.id] {
            let file = ExchangeFolder.File(replica: replica, name: ExchangeFolder.snapshotName)
            guard !used.contains(file), let entry = try exchange.entry(file.name, of: replica) else { continue }
            let address = exchange.address(of: file)
            if let validator = entry.validator, let known = try remoteThrough(recorded, address, validator: validator),
                token.covers(known)
            {
                continue
            }
            let header: BundleHeader
            do {
                header = try exchange.header(of: file, identity: key.envelopeIdentity).header
            } catch let error as ExchangeError where error.isDamage && replica != self.replica.id {
                // A peer's damaged snapshot is junk, said once while unchanged (exchange.md §6.5).
                failures.record(error, reading: address, as: address)
                continue
            } catch {
                // One this replica may not open (encrypted before it joined), or its own, which its
                // push checks: another's to replace, or its own to write again.
                continue
            }
            guard header.kind == .snapshot else { continue }
            if let validator = entry.validator {
                try rememberRemote(recorded, address, validator: validator, through: header.through)
            }
            guard !token.covers(header.through) else { continue }
            let first = try exchange.bundles(of: replica).first.flatMap {
                try? exchange.header(of: $0.file, identity: key.envelopeIdentity).header
            }
            if let first, token.covers(first.since), !(blocked[replica].map(header.through.covers) ?? false),
                try !holdsUnpublished(header.through, of: replica)
            {
                continue
            }
            if best == nil || header.through.covers(best!.1) { best = (file, header.through) }
        }
        return best?.0
    }
}
