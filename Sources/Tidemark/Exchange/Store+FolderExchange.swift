import Foundation
import TidemarkCore

extension Store {
    /// What a push wrote.
    public struct PushSummary: Sendable {
        /// The new bundle, or nil when there was nothing new to push.
        public var path: String?
        /// Its contents.
        public var export: ExportSummary?
    }

    /// Writes the transactions this replica holds beyond its previous push into a new numbered
    /// bundle in its own subfolder of `directory`. Peers that applied every earlier bundle of this
    /// folder can apply the new one.
    public func push(to directory: String, key: KeyFile) throws -> PushSummary {
        let exchange = try ExchangeFolder(directory)
        try rememberFolder(directory)
        try rejoinIfRetired()
        let folder = exchange.folder(of: replica.id)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ExchangeError.cannotWrite(path: folder, reason: FileProblem.describe(path: folder))
        }
        exchange.removeAbandonedTemporaries(of: replica.id)
        // What this replica wrote in clear before it learned that the group encrypts.
        try encryptOwnClearFiles(in: exchange, key: key)
        let existing = exchange.bundles(of: replica.id)
        let current = try currentToken()
        var (since, carried) = try pushStart(in: exchange, existing: existing, current: current, key: key)
        if since.covers(current) { return PushSummary(path: nil, export: nil) }
        let temporary = folder + "/" + ExchangeFolder.temporaryPrefix + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let summary = try exportBundle(since: since, to: temporary, key: key)
        var number = max(existing.last?.number ?? 0, try lastPushedNumber(directory)) + 1
        while !ExchangeFolder.publish(temporary, as: ExchangeFolder.bundleName(number), in: folder) {
            guard FileManager.default.fileExists(atPath: folder + "/" + ExchangeFolder.bundleName(number)) else {
                throw ExchangeError.cannotWrite(path: folder, reason: String(cString: strerror(errno)))
            }
            number += 1
        }
        // What this replica's bundles here now carry: the ranges this one added.
        for (origin, last) in summary.through.sequences where since[origin] < last { carried[origin] = last }
        try setPushedThrough(directory, carried, number: number)
        var export = summary
        export.path = folder + "/" + ExchangeFolder.bundleName(number)
        return PushSummary(path: export.path, export: export)
    }

    /// Where a push to `exchange` starts (Protocol/exchange.md §3.1): `since`, the token the new
    /// bundle assumes its readers hold, and `carried`, how far this replica's bundles there carry
    /// each origin (what the push records once it publishes).
    private func pushStart(
        in exchange: ExchangeFolder, existing: [(number: Int, path: String)], current: History.Token, key: KeyFile
    ) throws -> (since: History.Token, carried: History.Token) {
        // Continue from what this replica's bundles here carry: readers that applied them can apply
        // the next. (Pruning removes only bundles every active member applied, so that holds after
        // a prune.)
        var carried = try pushedThrough(exchange.root) ?? .zero
        if carried == .zero, let newest = existing.last,
            let (_, header, _) = try? ExchangeFolder.header(of: newest.path, identity: key.envelopeIdentity)
        {
            for range in header.ranges { carried[range.origin] = range.last }
            carried[replica.id] = max(carried[replica.id], header.through[replica.id])
        }
        // History this replica pruned was applied by every active member; others catch up by snapshot.
        let pruned = try prunedToken()
        var since = carried.merged(with: pruned)
        // Each transaction crosses the folder once (Protocol/exchange.md §3.1): another origin's
        // travel in its own files here, and are relayed only where none of them provides them.
        let provided = try providedSequences(in: exchange, key: key)
        // Unless files this replica's bundles here depend on are gone (lost, not pruned): those
        // bundles can then no longer be applied by a replica that lacks them, so this one depends
        // on nothing but this replica's pruned history, and carries everything else again.
        let required = existing.compactMap {
            try? ExchangeFolder.header(of: $0.path, identity: key.envelopeIdentity).header.since
        }.reduce(History.Token.zero) { $0.merged(with: $1) }
        let lost = required.sequences.contains { origin, needed in
            origin != replica.id && needed > max(carried[origin], provided[origin] ?? 0, pruned[origin])
        }
        if lost {
            carried = .zero
            since = pruned
        } else {
            for (origin, position) in provided { since[origin] = max(since[origin], min(current[origin], position)) }
        }
        return (since, carried)
    }

    /// What a pull did.
    public struct PullSummary: Sendable {
        /// Bundles applied, in order (snapshots included).
        public var imported: [ImportSummary]
        /// Files skipped with the reason; they are retried on the next pull.
        public var warnings: [String]
        /// The watermark file written.
        public var watermark: String
        /// The automatic prune that followed, if enabled.
        public var prune: PruneReport?
        /// Schema versions that bundles held in the store (this pull's or earlier ones') wait for:
        /// make the same migration, then pull again.
        public var waiting: [SchemaWait] = []
        /// The user tables whose rows the pull changed (every import's `changedTables`).
        public var changedTables: Set<String> { imported.reduce(into: []) { $0.formUnion($1.changedTables) } }
    }

    /// Applies every bundle in the peers' subfolders of `directory` that this store lacks, in an
    /// order that satisfies their prerequisites. A damaged, partial or untrusted file is reported
    /// in `warnings` and retried next time; it does not stop the others. When bundles this store
    /// needs were pruned away, it catches up from a peer's snapshot. Then it writes this
    /// replica's signed watermark into its own subfolder and, unless `prune` is false, prunes.
    public func pull(from directory: String, key: KeyFile, prune autoPrune: Bool = true) throws -> PullSummary {
        let exchange = try ExchangeFolder(directory)
        try rememberFolder(directory)
        var pending: [String] = []
        var failures: [String: String] = [:]
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            pending += exchange.bundles(of: replica).map(\.path)
            for path in exchange.strayFiles(of: replica) {
                let temporary = URL(fileURLWithPath: path).lastPathComponent.hasPrefix(ExchangeFolder.temporaryPrefix)
                failures[path] =
                    !temporary
                    ? "\(path): not a Tidemark exchange file"
                    : ExchangeFolder.isAbandonedTemporary(path)
                        ? "\(path): left by an interrupted write of its sender, which removes it on its next push or pull"
                        : "\(path): still being written by its sender"
            }
        }
        // Bundles held for a schema version: they go with the folder's, and apply once the store has it.
        let held = try HeldCopies(store: self)
        defer { held.remove() }
        pending = held.paths + pending
        var imported: [ImportSummary] = []
        var usedSnapshots = Set<String>()
        while true {
            pending = try applyBundles(pending, imported: &imported, failures: &failures, held: held, key: key)
            // A peer whose bundles this store cannot follow (pruned away before it applied them):
            // catch up from that peer's snapshot, then apply the bundles again.
            guard let snapshot = try snapshotToCatchUp(in: exchange, excluding: usedSnapshots, key: key) else { break }
            usedSnapshots.insert(snapshot)
            do {
                let summary = try importBundle(at: snapshot, key: key)
                if !summary.alreadyApplied { imported.append(summary) }
                failures[snapshot] = nil
            } catch let error as ExchangeError {
                failures[snapshot] = error.description
            }
        }
        // A bundle that builds on held changes (directly, or through other such bundles) waits for
        // the same migration as they do: that is what `waiting` reports, not a problem with it.
        if !pending.isEmpty {
            var reach = try mappingErrors {
                try database.read { db in try HeldBundles.reach(from: Store.currentToken(db), db) }
            }
            var left = pending.compactMap { path in
                (try? ExchangeFolder.header(of: path, identity: key.envelopeIdentity)).map { (path, $0.1) }
            }
            var progress = true
            while progress {
                progress = false
                for (path, header) in left {
                    var needed = header.since
                    for range in header.ranges { needed[range.origin] = max(needed[range.origin], range.first - 1) }
                    guard reach.covers(needed) else { continue }
                    failures[path] = nil
                    reach = reach.merged(with: header.through)
                    left.removeAll { $0.0 == path }
                    progress = true
                }
            }
        }
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            let path = exchange.folder(of: replica) + "/" + ExchangeFolder.watermarkName
            do { try readWatermark(at: path, key: key) } catch let error as ExchangeError {
                failures[path] = error.description
            }
        }
        try rejoinIfRetired()
        let warnings = failures.keys.sorted().map { "skipped \(failures[$0]!) (will retry on the next pull)" }
        let watermark = try writeWatermark(in: exchange, key: key)
        let report = autoPrune ? try prune(key: key) : nil
        return PullSummary(
            imported: imported, warnings: warnings, watermark: watermark, prune: report, waiting: try schemaWaits())
    }

    /// Applies what it can of `paths`, repeating while progress is made; returns the bundles that
    /// still miss prerequisites.
    private func applyBundles(
        _ paths: [String], imported: inout [ImportSummary], failures: inout [String: String], held: HeldCopies,
        key: KeyFile
    ) throws -> [String] {
        var pending = paths
        var progress = true
        while progress && !pending.isEmpty {
            progress = false
            var waiting: [String] = []
            let token = try currentToken()
            for path in pending {
                do {
                    let (_, header, encrypted) = try ExchangeFolder.header(of: path, identity: key.envelopeIdentity)
                    guard header.kind == .changes else {
                        failures[path] = "\(path): a numbered bundle must be a change bundle"
                        continue
                    }
                    if token.covers(header.through) {
                        // Nothing to apply, but a downgraded copy is still reported.
                        try mappingErrors {
                            try database.read { db in
                                try Self.checkNotDowngraded(
                                    db, header: header, encrypted: held.cameEncrypted(path) ?? encrypted, path: path)
                            }
                        }
                        failures[path] = nil
                        try held.release(path)
                        continue
                    }
                    let summary = try importBundle(at: path, key: key, cameEncrypted: held.cameEncrypted(path))
                    if summary.waitingFor != nil {
                        failures[path] = nil
                        continue
                    }
                    if !summary.alreadyApplied { imported.append(summary) }
                    progress = true
                    failures[path] = nil
                } catch let error as ExchangeError {
                    if case .missingPrerequisites = error { waiting.append(path) }
                    failures[path] = error.description
                }
            }
            pending = waiting
        }
        return pending
    }

    /// A peer's snapshot this store needs: one that holds something the store lacks, from a peer
    /// whose remaining bundles do not start where the store's history of that peer's folder ends.
    private func snapshotToCatchUp(in exchange: ExchangeFolder, excluding used: Set<String>, key: KeyFile) throws
        -> String?
    {
        let token = try currentToken()
        var best: (String, History.Token)?
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            let path = exchange.folder(of: replica) + "/" + ExchangeFolder.snapshotName
            guard !used.contains(path), FileManager.default.fileExists(atPath: path),
                let (_, header, _) = try? ExchangeFolder.header(of: path, identity: key.envelopeIdentity),
                header.kind == .snapshot,
                !token.covers(header.through)
            else { continue }
            let first = exchange.bundles(of: replica).first.flatMap {
                try? ExchangeFolder.header(of: $0.path, identity: key.envelopeIdentity).header
            }
            if let first, token.covers(first.since) { continue }
            if best == nil || header.through.covers(best!.1) { best = (path, header.through) }
        }
        return best?.0
    }

    /// For every other replica with a folder in `exchange`, how far its own files there provide
    /// its transactions without a gap (Protocol/exchange.md §3.1): its snapshot's position, and,
    /// when its numbered bundles run without a missing number from one that continues that
    /// position, its newest bundle's. Files whose header this replica cannot read, or that another
    /// replica signed, provide nothing.
    func providedSequences(in exchange: ExchangeFolder, key: KeyFile) throws -> [Replica.ID: Int64] {
        var provided: [Replica.ID: Int64] = [:]
        for origin in try exchange.replicaFolders(except: replica.id) {
            func header(_ path: String) -> BundleHeader? {
                guard FileManager.default.fileExists(atPath: path),
                    let (sender, header, _) = try? ExchangeFolder.header(of: path, identity: key.envelopeIdentity),
                    sender == origin
                else { return nil }
                return header
            }
            var position = header(exchange.folder(of: origin) + "/" + ExchangeFolder.snapshotName)?.through[origin] ?? 0
            let bundles = exchange.bundles(of: origin)
            if let oldest = bundles.first, let newest = bundles.last,
                newest.number - oldest.number == bundles.count - 1,
                let first = header(oldest.path), let last = header(newest.path)
            {
                let start = first.ranges.first { $0.origin == origin }?.first ?? first.since[origin] + 1
                if start - 1 <= position { position = max(position, last.through[origin]) }
            }
            provided[origin] = position
        }
        return provided
    }

    func pushedThrough(_ directory: String) throws -> History.Token? {
        let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        return try mappingErrors {
            try database.read { db in
                try String.fetchOne(
                    db, sql: "SELECT pushed_through FROM tidemark_folders WHERE path = ?", arguments: [absolute])
            }
        }.flatMap { try? History.Token(parsing: $0) }
    }

    func setPushedThrough(_ directory: String, _ token: History.Token, number: Int) throws {
        let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        try mappingErrors {
            try database.write { db in
                try db.execute(
                    sql:
                        "UPDATE tidemark_folders SET pushed_through = ?, last_number = max(last_number, ?) WHERE path = ?",
                    arguments: [token.description, number, absolute])
            }
        }
    }

    func lastPushedNumber(_ directory: String) throws -> Int {
        let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        return try mappingErrors {
            try database.read { db in
                try Int.fetchOne(
                    db, sql: "SELECT last_number FROM tidemark_folders WHERE path = ?", arguments: [absolute]) ?? 0
            }
        }
    }

    /// Writes `DIR/<id>/watermark.tmw`: a signed bundle of kind watermark whose `through` token is
    /// what this replica has applied. Replaced atomically.
    func writeWatermark(in exchange: ExchangeFolder, key: KeyFile) throws -> String {
        let folder = exchange.folder(of: replica.id)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ExchangeError.cannotWrite(path: folder, reason: FileProblem.describe(path: folder))
        }
        exchange.removeAbandonedTemporaries(of: replica.id)
        let path = folder + "/" + ExchangeFolder.watermarkName
        let token = try currentToken()
        _ = try exportBundle(since: token, to: path, key: key, kind: .watermark)
        return path
    }
}

/// Copies of the bundles held in a store that it can apply now (it has made the version they
/// need), as files a pull imports like the folder's; removed
/// when the pull ends. A held bundle leaves the store when it applies.
struct HeldCopies {
    let store: Store
    let directory: String?
    /// File path to digest.
    private let digests: [String: [UInt8]]
    /// File path to whether the bundle came encrypted.
    private let encrypted: [String: Bool]

    init(store: Store) throws {
        self.store = store
        // Only those the store can apply now: one waiting for a version the store has not made
        // would only be verified again and held again.
        let bundles = try store.mappingErrors {
            try store.database.read { db in
                let position = try SchemaLineage.position(db)
                return try HeldBundles.all(db).filter { $0.position <= position }
            }
        }
        guard !bundles.isEmpty else {
            directory = nil
            digests = [:]
            encrypted = [:]
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tidemark-held-\(UUID().uuidString)"
        ).path
        // The copies are in clear (what came encrypted too): only this user may read them.
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ExchangeError.cannotWrite(path: directory, reason: FileProblem.describe(path: directory))
        }
        var digests: [String: [UInt8]] = [:]
        var encrypted: [String: Bool] = [:]
        for (n, bundle) in bundles.enumerated() {
            let path = directory + "/held-\(n + 1)-v\(bundle.position).tmb"
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(bundle.bytes), attributes: [.posixPermissions: 0o600])
            else {
                throw ExchangeError.cannotWrite(path: path, reason: FileProblem.describe(path: path))
            }
            digests[path] = bundle.digest
            encrypted[path] = bundle.encrypted
        }
        self.directory = directory
        self.digests = digests
        self.encrypted = encrypted
    }

    /// For one of the copies, whether its bundle came encrypted; nil for any other path.
    func cameEncrypted(_ path: String) -> Bool? { encrypted[path] }

    /// The copies, in the order they were held.
    var paths: [String] { digests.keys.sorted { $0.localizedStandardCompare($1) == .orderedAscending } }

    /// Forgets the held bundle copied to `path`: the store already has everything it carries.
    func release(_ path: String) throws {
        guard let digest = digests[path] else { return }
        try store.mappingErrors { try store.database.write { db in try HeldBundles.release(db, digest: digest) } }
    }

    /// Removes the copies.
    func remove() {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }
}
