import Foundation
import TidemarkCore

extension Store {
    /// What a push wrote.
    public struct PushSummary: Sendable {
        /// The new bundle (its path, or its URL), or nil when there was nothing new to push.
        public var path: String?
        /// Its contents.
        public var export: ExportSummary?
        /// Files removed from this replica's own subfolder, each as `address: why`: abandoned
        /// temporaries, copies a sync tool made, and damaged bundles (whose transactions the new
        /// bundle carries again).
        public var removed: [String] = []
        /// Files of this replica's subfolder kept although they are not its exchange files, each
        /// as `address: why`; each is said once while it is unchanged.
        public var warnings: [String] = []
        /// The snapshot written first, when the new bundle builds on transactions that no file
        /// of the folder provides (held as row state since a snapshot caught this replica up), so
        /// that a reader lacking them can catch up from it.
        public var snapshot: String?
        /// Schema versions taken on from the members' newest files before publishing (a store
        /// created from the app's newer schema, Protocol/schema.md §5).
        public var adoptedVersions: [Schema.Version] = []
    }

    /// Writes the transactions this replica holds beyond its previous push into a new numbered
    /// bundle in its own subfolder of `location`: a folder, or a WebDAV collection's URL (which
    /// `settings` says how to reach). Peers that applied every earlier bundle of this exchange
    /// folder can apply the new one.
    public func push(to location: String, key: KeyFile, settings: ExchangeSettings = .init()) throws -> PushSummary {
        // Before anything is made in the folder.
        guard key.publicKey == publicKey else { throw ExchangeError.wrongKey(path: key.path) }
        try checkNotRestored()
        let (exchange, recorded) = try openExchange(location, settings: settings)
        defer { exchange.transport.close() }
        try rejoinIfRetired()
        let mine = replica.id.description
        try exchange.transport.createFolder(mine)
        try noteEncryptedPeerFiles(in: exchange)
        let tidy = try tidyOwnFolder(exchange, recorded: recorded, key: key, checkPublished: true)
        // What this replica wrote in clear before it learned that the group encrypts.
        try encryptOwnClearFiles(in: exchange, recorded: recorded, key: key)
        let existing = try exchange.bundles(of: replica.id)
        try checkUnrecordedOwnBundles(existing, in: exchange, recorded: recorded, key: key)
        // A peer's watermark may show this store restored where no bundle of its later self is left
        // (pruned into a snapshot): before own transactions go out here, read those that changed
        // since they were last read.
        var adopted: [Schema.Version] = []
        if try currentToken()[replica.id] > pushedThrough(recorded)?[replica.id] ?? 0 {
            var unread = PullFailures()
            _ = try readWatermarks(in: exchange, recorded: recorded, failures: &unread, key: key)
            try checkNotRestored()
            // A store created from the app's newer schema that has not pulled yet: its own
            // transactions go out under the versions the members have made, and not before the
            // members have what they name.
            let headers = try newestHeaders(in: exchange, key: key)
            adopted = try takeOnFolderVersions(in: exchange, key: key, headers: headers)
            let ahead = try namesAhead(of: headers)
            if !ahead.isEmpty { throw ExchangeError.aheadOfGroup(path: location, names: ahead) }
        }
        let current = try currentToken()
        var since = History.Token.zero
        var carried = History.Token.zero
        var snapshot: String?
        /// Where the bundle starts, and the snapshot written first when one is needed.
        func plan() throws {
            var provided: [Replica.ID: Int64]
            (since, carried, provided) = try pushStart(
                in: exchange, recorded: recorded, existing: existing, current: current, key: key,
                republish: tidy.removedBundle)
            // Also when there is nothing new to push: transactions this replica holds only as row
            // state reach readers through its snapshot or not at all (Protocol/pruning.md §4.2); and
            // a member that lacks what this replica pruned catches up from a snapshot (§3.5).
            if try tidy.removedSnapshot && snapshot == nil
                || snapshotFallsShort(of: since, carried: carried, provided: provided, in: exchange, key: key)
                || ownSnapshotLacksWhatAMemberNeeds(in: exchange, recorded: recorded, existing: existing, key: key)
            {
                let written = try publishSnapshot(through: exchange.transport, recorded: recorded, key: key)
                snapshot = written ?? snapshot
                // What the snapshot holds is provided from now on.
                if written != nil {
                    (since, carried, provided) = try pushStart(
                        in: exchange, recorded: recorded, existing: existing, current: current, key: key,
                        republish: tidy.removedBundle)
                }
            }
        }
        try plan()
        if since.covers(current) {
            return PushSummary(
                path: nil, export: nil, removed: tidy.removed, warnings: tidy.kept, snapshot: snapshot,
                adoptedVersions: adopted)
        }
        let temporary = exchange.transport.temporaryFile(for: mine)
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        var exported: (ExportSummary, String?)
        var attempts = 1
        while true {
            do {
                exported = try exportForPush(
                    since: &since, carried: &carried, to: temporary, in: exchange, recorded: recorded, key: key)
                break
            } catch StoreError.historyTokenExpired where attempts < 3 {
                // A prune in another process deleted history since this push planned: plan again.
                attempts += 1
                try plan()
                if since.covers(current) {
                    return PushSummary(
                        path: nil, export: nil, removed: tidy.removed, warnings: tidy.kept, snapshot: snapshot,
                        adoptedVersions: adopted)
                }
            }
        }
        let (summary, written) = exported
        snapshot = written ?? snapshot
        let first = max(existing.last?.number ?? 0, try lastPushedNumber(recorded)) + 1
        let size = Self.fileSize(temporary)
        let name = try exchange.transport.publish(temporary, in: mine) { ExchangeFolder.bundleName(first + $0) }
        try noteWritten(recorded, mine, name, size: size)
        let number = ExchangeFolder.bundleNumber(name)!
        // What this replica's bundles here now carry: the ranges this one added.
        for (origin, last) in summary.through.sequences where since[origin] < last { carried[origin] = last }
        try setPushedThrough(recorded, carried, number: number)
        // In clear, who can open this replica's bundles here stays recorded while bundles it
        // encrypted before are still there: a member trusted since cannot open those.
        let readers = try readersOfASnapshot()
        // Looked at only while a record is kept: a group that never encrypted reads no file here.
        let recordKept = try bundleReaders(recorded) != nil
        if readers != nil || !recordKept || !existing.contains(where: { !exchange.isClear($0.file) }) {
            try noteBundleReaders(readers, since: since[replica.id], recorded)
        }
        var export = summary
        export.path = exchange.transport.address(of: name, in: mine)
        return PushSummary(
            path: export.path, export: export, removed: tidy.removed, warnings: tidy.kept, snapshot: snapshot,
            adoptedVersions: adopted)
    }

    /// Exports a push's bundle, since `since`, to `temporary`. When history holds a change too
    /// large for any bundle record (Protocol/bundle.md §4.1), what it led to reaches readers as the
    /// rows are now, in this replica's snapshot, written first (a later change that made the row
    /// smaller fits), and the bundle assumes what the snapshot holds of this replica's
    /// transactions, as after pruned history (pruning.md §4.2): a reader that lacks them finds the
    /// bundle waiting and catches up from the snapshot first (§5.4). Returns the export and that
    /// snapshot's address. A row still too large fails here again.
    private func exportForPush(
        since: inout History.Token, carried: inout History.Token, to temporary: String, in exchange: ExchangeFolder,
        recorded: String, key: KeyFile
    ) throws -> (ExportSummary, String?) {
        do {
            return (try exportBundle(since: since, to: temporary, key: key), nil)
        } catch let error as ExchangeError {
            guard case .rowTooLarge = error else { throw error }
            let through = try currentToken()
            guard let written = try publishSnapshot(through: exchange.transport, recorded: recorded, key: key)
            else { throw error }
            since[replica.id] = max(since[replica.id], through[replica.id])
            carried[replica.id] = max(carried[replica.id], through[replica.id])
            return (try exportBundle(since: since, to: temporary, key: key), written)
        }
    }

    /// Whether this replica's own bundles in `exchange` (`existing`, with their `headers`) no
    /// longer carry its transactions through `carried` to a reader that holds only what its pruned
    /// history or a snapshot there holds (a prune deletes only bundles such a snapshot holds,
    /// pruning.md §3.3): a file was lost, not pruned (Protocol/exchange.md §3.1), and a reader
    /// that lacks what it held could apply none of the bundles after it. Read in order, a bundle
    /// extends what the files carry when its `since` is within it; one that carries everything
    /// again (after such a loss) extends it from the start.
    private func ownFilesFallShort(
        _ existing: [(number: Int, file: ExchangeFolder.File)], headers: [BundleHeader?], carried: Int64,
        pruned: Int64, in exchange: ExchangeFolder, key: KeyFile
    ) throws -> Bool {
        // An unreadable file is left to the owner's check of its own files (§6.5).
        guard carried > pruned, !headers.contains(where: { $0 == nil }) else { return false }
        let reach = { (start: Int64) in
            headers.reduce(start) { reached, header in
                guard let header, header.since[self.replica.id] <= reached else { return reached }
                return max(reached, header.through[self.replica.id])
            }
        }
        if reach(pruned) >= carried { return false }
        return reach(max(pruned, try folderSnapshots(in: exchange, key: key).position(of: replica.id))) < carried
    }

    /// Where a push to `exchange` starts (Protocol/exchange.md §3.1): `since`, the token the new
    /// bundle assumes its readers hold; `carried`, how far this replica's bundles there carry
    /// each origin (what the push records once it publishes); and `provided`, how far the other
    /// origins' own files there provide theirs.
    private func pushStart(
        in exchange: ExchangeFolder, recorded: String, existing: [(number: Int, file: ExchangeFolder.File)],
        current: History.Token, key: KeyFile, republish: Bool
    ) throws -> (since: History.Token, carried: History.Token, provided: [Replica.ID: Int64]) {
        // Continue from what this replica's bundles here carry: readers that applied them can apply
        // the next. (Pruning removes only bundles every active member applied, so that holds after
        // a prune.)
        var carried = try pushedThrough(recorded) ?? .zero
        if carried == .zero, let newest = existing.last,
            let (_, header, _) = try? exchange.header(of: newest.file, identity: key.envelopeIdentity)
        {
            for range in header.ranges { carried[range.origin] = range.last }
            carried[replica.id] = max(carried[replica.id], header.through[replica.id])
        }
        // History this replica pruned was applied by every active member; others catch up by snapshot.
        let pruned = try prunedToken()
        var since = carried.merged(with: pruned)
        // Each transaction crosses the folder once (Protocol/exchange.md §3.1): another origin's
        // travel in its own files here, and are relayed only where none of them provides them.
        let provided = try providedSequences(in: exchange, key: key, current: current, carried: carried)
        // Unless files this replica's bundles here depend on are gone (lost, not pruned), or one
        // of its own bundles was removed as damaged: those bundles can then no longer be applied
        // by a replica that lacks them, so this one depends on nothing but this replica's pruned
        // history, and carries everything else again.
        let headers = existing.map { try? exchange.header(of: $0.file, identity: key.envelopeIdentity).header }
        let required = headers.compactMap { $0?.since }.reduce(History.Token.zero) { $0.merged(with: $1) }
        let lost =
            try republish
            || required.sequences.contains { origin, needed in
                origin != replica.id && needed > max(carried[origin], provided[origin] ?? 0, pruned[origin])
            }
            || ownFilesFallShort(
                existing, headers: headers, carried: carried[replica.id], pruned: pruned[replica.id], in: exchange,
                key: key)
        if lost {
            carried = .zero
            since = pruned
        } else {
            for (origin, position) in provided { since[origin] = max(since[origin], min(current[origin], position)) }
        }
        return (since, carried, provided)
    }

    /// Whether `since` assumes transactions of another origin that no file of `exchange`
    /// provides, neither this replica's bundles (`carried`) nor that origin's own (`provided`),
    /// beyond what this replica's snapshot there holds. It holds them only as row state, after a
    /// snapshot caught it up; a reader lacking them cannot follow the new bundle and catches up
    /// from this replica's snapshot instead (Protocol/pruning.md §5.4), which must then hold them.
    private func snapshotFallsShort(
        of since: History.Token, carried: History.Token, provided: [Replica.ID: Int64], in exchange: ExchangeFolder,
        key: KeyFile
    ) throws -> Bool {
        let unprovided = since.sequences.filter { origin, position in
            origin != replica.id && position > max(carried[origin], provided[origin] ?? 0)
        }
        guard !unprovided.isEmpty else { return false }
        let file = ExchangeFolder.File(replica: replica.id, name: ExchangeFolder.snapshotName)
        guard try exchange.contains(file.name, of: replica.id),
            let (_, header, _) = try? exchange.header(of: file, identity: key.envelopeIdentity)
        else { return true }
        return unprovided.contains { origin, position in header.through[origin] < position }
    }

    /// Whether an active member lacks own transactions that no bundle of `exchange` gives it, and
    /// this replica's own snapshot there does not hold them or, when the group encrypts, was not
    /// encrypted for that member (`membersLacking`). Those are the transactions its prunes removed
    /// there: what its oldest bundle there (`existing`) assumes of its own, or all it pushed there
    /// when none is left, and its own history pruned before it was ever pushed there; and those in
    /// bundles encrypted before the member was trusted, which it cannot open (`bundleReaders`),
    /// whether or not the group still encrypts.
    private func ownSnapshotLacksWhatAMemberNeeds(
        in exchange: ExchangeFolder, recorded: String, existing: [(number: Int, file: ExchangeFolder.File)],
        key: KeyFile
    ) throws -> Bool {
        let oldest = existing.first.flatMap { try? exchange.header(of: $0.file, identity: key.envelopeIdentity) }
        let pushed = try pushedThrough(recorded)?[replica.id] ?? 0
        var removed = oldest?.header.since[replica.id] ?? pushed
        // Own history pruned beyond what was ever pushed here (a prune before this folder was
        // used, with no member to wait for, or with the only one retired) is in no file here, nor
        // in any to come: a retired member that comes back needs it too, where the rest of what a
        // prune removed is in a snapshot of the folder (pruning.md §3.3).
        let pruned = try prunedToken()[replica.id]
        let unpublished = pruned > pushed ? pruned : 0
        removed = max(removed, unpublished)
        let encrypted = try mappingErrors { try database.read { db in try Self.encrypts(db) } }
        // Kept after the group stops encrypting while encrypted bundles remain (see `push`).
        let readers = try bundleReaders(recorded)
        let needed = { (member: Replica.ID, retired: Bool) in
            retired ? unpublished : max(removed, readers.map { $0[member] ?? pushed } ?? 0)
        }
        guard try !membersLacking(ownTransactionsThrough: needed).isEmpty else { return false }
        // The watermarks known here are those of the last pull: the member may have caught up since.
        var unread = PullFailures()
        _ = try readWatermarks(in: exchange, recorded: recorded, failures: &unread, key: key)
        // One of them may show this store to be an older copy of itself: it then publishes nothing.
        try checkNotRestored()
        let lacking = try membersLacking(ownTransactionsThrough: needed)
        guard let most = lacking.map({ needed($0.id, $0.retired) }).max() else { return false }
        let file = ExchangeFolder.File(replica: replica.id, name: ExchangeFolder.snapshotName)
        guard try exchange.contains(file.name, of: replica.id),
            let header = (try? exchange.signedHeader(of: file, identity: key.envelopeIdentity)) ?? nil,
            header.through[replica.id] >= most
        else { return true }
        guard encrypted else { return false }
        guard let readers = try snapshotReaders(recorded) else { return true }
        return lacking.contains { !readers.contains($0.id) }
    }

    /// For every other origin, how far the files of `exchange` provide its transactions without a
    /// gap to every reader (Protocol/exchange.md §3.1): its own files (`publishedByOrigins`), then,
    /// where this replica holds transactions of an origin beyond that (`current`), the relays:
    /// another replica's bundle whose prerequisites what is provided so far covers (this replica's
    /// own transactions as far as its bundles here carry them, `carried`) can be applied by every
    /// reader, which then holds those and the bundle's ranges.
    func providedSequences(
        in exchange: ExchangeFolder, key: KeyFile, current: History.Token, carried: History.Token
    ) throws -> [Replica.ID: Int64] {
        var (provided, bundles) = try publishedByOrigins(in: exchange, key: key)
        let relayed = { (origin: Replica.ID, position: Int64) in
            origin != self.replica.id && position > provided[origin] ?? 0
        }
        guard current.sequences.contains(where: relayed) else { return provided }
        // Relays: read every other bundle once, then take in those readers can apply until none is left.
        var waiting = bundles.compactMap { (try? exchange.signedHeader(of: $0, identity: key.envelopeIdentity)) ?? nil }
        var progress = true
        while progress {
            progress = false
            var reach = History.Token(sequences: provided)
            reach[replica.id] = carried[replica.id]
            for bundle in waiting where reach.covers(bundle.prerequisites) {
                // Not `through`: a sender that holds some transactions only as row state (from a
                // snapshot) has them in its token, and a bundle that assumes them does not carry them.
                var holds = bundle.prerequisites
                for range in bundle.ranges { holds[range.origin] = max(holds[range.origin], range.last) }
                for (origin, position) in holds.sequences where origin != replica.id {
                    provided[origin] = max(provided[origin] ?? 0, position)
                }
                progress = true
            }
            waiting.removeAll { reach.covers($0.prerequisites) }
        }
        return provided
    }

    /// For every other replica with a folder in `exchange`, how far its own files there provide
    /// its transactions without a gap to every reader: when its numbered bundles run without a
    /// missing number from one that continues a snapshot (or its first transaction), its newest
    /// bundle's position, which readers that follow the bundles reach (they never read the
    /// snapshot, which may hold more); otherwise the snapshot's position. The snapshot is the
    /// furthest of the folder's (`FolderSnapshots`), which a reader that cannot follow the bundles
    /// catches up from, or with `ownSnapshots` that replica's own. Also returns every numbered
    /// bundle listed. Files whose header this replica cannot read, or that another replica signed,
    /// provide nothing.
    func publishedByOrigins(in exchange: ExchangeFolder, key: KeyFile, ownSnapshots: Bool = false) throws
        -> (provided: [Replica.ID: Int64], bundles: [ExchangeFolder.File])
    {
        var provided: [Replica.ID: Int64] = [:]
        var listed: [ExchangeFolder.File] = []
        let header = { (file: ExchangeFolder.File) in
            (try? exchange.signedHeader(of: file, identity: key.envelopeIdentity)) ?? nil
        }
        let snapshots = ownSnapshots ? nil : try folderSnapshots(in: exchange, key: key)
        for origin in try exchange.replicaFolders(except: replica.id) {
            let snapshot = ExchangeFolder.File(replica: origin, name: ExchangeFolder.snapshotName)
            var position =
                try snapshots?.headers[origin]?.through[origin]
                ?? (exchange.contains(snapshot.name, of: origin) ? header(snapshot)?.through[origin] ?? 0 : 0)
            position = max(position, snapshots?.position(of: origin) ?? 0)
            let bundles = try exchange.bundles(of: origin)
            listed += bundles.map(\.file)
            if let oldest = bundles.first, let newest = bundles.last,
                newest.number - oldest.number == bundles.count - 1,
                let first = header(oldest.file), let last = header(newest.file)
            {
                let start = first.ranges.first { $0.origin == origin }?.first ?? first.since[origin] + 1
                if start - 1 <= position { position = last.through[origin] }
            }
            provided[origin] = position
        }
        return (provided, listed)
    }
}
