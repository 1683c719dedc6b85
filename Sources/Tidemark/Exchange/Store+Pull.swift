import Crypto
import Foundation
import TidemarkCore

extension Store {
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
        /// Bytes fetched from the server of a WebDAV exchange folder (none from a local folder).
        public var bytesDownloaded: Int64 = 0
        /// The user tables whose rows the pull changed (every import's `changedTables`).
        public var changedTables: Set<String> { imported.reduce(into: []) { $0.formUnion($1.changedTables) } }
    }

    /// Applies every bundle in the peers' subfolders of `location` (a folder, or a WebDAV
    /// collection's URL) that this store lacks, in an order that satisfies their prerequisites. A
    /// damaged, partial, untrusted or unreachable file is reported in `warnings` and retried next
    /// time; it does not stop the others. When bundles this store needs were pruned away, it
    /// catches up from a peer's snapshot. Then it writes this replica's signed watermark into its
    /// own subfolder and, unless `prune` is false, prunes.
    public func pull(
        from location: String, key: KeyFile, prune autoPrune: Bool = true, settings: ExchangeSettings = .init()
    ) throws -> PullSummary {
        let (exchange, recorded) = try openExchange(location, settings: settings)
        defer { exchange.transport.close() }
        var sources = PullSources(exchange: exchange, recorded: recorded)
        var failures: [String: String] = [:]
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            for bundle in try exchange.bundleEntries(of: replica) {
                sources.add(bundle.file, validator: bundle.validator)
            }
            for (file, abandoned) in try exchange.strayFiles(of: replica) {
                let address = exchange.address(of: file)
                failures[address] =
                    !file.name.hasPrefix(ExchangeFolder.temporaryPrefix)
                    ? "\(address): not a Tidemark exchange file"
                    : abandoned
                        ? "\(address): left by an interrupted write of its sender, which removes it on its next push or pull"
                        : "\(address): still being written by its sender"
            }
        }
        // Bundles held for a schema version: they go with the folder's, and apply once the store has it.
        let held = try HeldCopies(store: self)
        defer { held.remove() }
        var pending = held.paths + sources.order
        var imported: [ImportSummary] = []
        var usedSnapshots = Set<ExchangeFolder.File>()
        while true {
            pending = try applyBundles(
                pending, from: sources, imported: &imported, failures: &failures, held: held, key: key)
            // A peer whose bundles this store cannot follow (pruned away before it applied them):
            // catch up from that peer's snapshot, then apply the bundles again.
            guard
                let snapshot = try snapshotToCatchUp(
                    in: exchange, recorded: recorded, excluding: usedSnapshots, key: key)
            else { break }
            usedSnapshots.insert(snapshot)
            let address = exchange.address(of: snapshot)
            var local = address
            do {
                local = try exchange.localPath(of: snapshot)
                let summary = try importBundle(at: local, key: key)
                if !summary.alreadyApplied { imported.append(summary) }
                failures[address] = nil
            } catch let error as ExchangeError {
                failures[address] = error.naming(local, as: address).description
            }
        }
        // A bundle that builds on held changes (directly, or through other such bundles) waits for
        // the same migration as they do: that is what `waiting` reports, not a problem with it.
        if !pending.isEmpty {
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
                    var needed = header.since
                    for range in header.ranges { needed[range.origin] = max(needed[range.origin], range.first - 1) }
                    guard reach.covers(needed) else { continue }
                    failures[address] = nil
                    reach = reach.merged(with: header.through)
                    left.removeAll { $0.0 == address }
                    progress = true
                }
            }
        }
        var listed = Set(sources.order)
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            if try exchange.contains(ExchangeFolder.snapshotName, of: replica) {
                listed.insert(exchange.address(of: .init(replica: replica, name: ExchangeFolder.snapshotName)))
            }
            guard let entry = try exchange.entry(ExchangeFolder.watermarkName, of: replica) else { continue }
            let file = ExchangeFolder.File(replica: replica, name: entry.name)
            let address = exchange.address(of: file)
            listed.insert(address)
            // A watermark read before and not replaced since says nothing new.
            if let validator = entry.validator,
                try remoteThrough(recorded, address, validator: validator) != nil
            {
                continue
            }
            var local = address
            do {
                local = try exchange.localPath(of: file)
                if let (_, token) = try readWatermark(at: local, key: key), let validator = entry.validator {
                    try rememberRemote(recorded, address, validator: validator, through: token)
                }
            } catch let error as ExchangeError {
                failures[address] = error.naming(local, as: address).description
            }
        }
        try mappingErrors {
            try database.write { db in try RemoteFiles.keepOnly(db, location: recorded, files: listed) }
        }
        try rejoinIfRetired()
        let warnings = failures.keys.sorted().map { "skipped \(failures[$0]!) (will retry on the next pull)" }
        let watermark = try writeWatermark(in: exchange, key: key)
        let report = autoPrune ? try prune(key: key, settings: settings) : nil
        return PullSummary(
            imported: imported, warnings: warnings, watermark: watermark, prune: report, waiting: try schemaWaits(),
            bytesDownloaded: exchange.transport.bytesDownloaded)
    }

    /// Applies what it can of `addresses`, repeating while progress is made; returns the bundles
    /// that still miss prerequisites.
    private func applyBundles(
        _ addresses: [String], from sources: PullSources, imported: inout [ImportSummary],
        failures: inout [String: String], held: HeldCopies, key: KeyFile
    ) throws -> [String] {
        var pending = addresses
        var progress = true
        while progress && !pending.isEmpty {
            progress = false
            var waiting: [String] = []
            let token = try currentToken()
            for address in pending {
                var local = address
                do {
                    // Read in an earlier pull, unchanged since, and nothing this store lacks.
                    if let validator = sources.validator(of: address),
                        let known = try remoteThrough(sources.recorded, address, validator: validator),
                        token.covers(known)
                    {
                        failures[address] = nil
                        continue
                    }
                    let (_, header, encrypted) = try sources.header(of: address, identity: key.envelopeIdentity)
                    if let validator = sources.validator(of: address) {
                        try rememberRemote(sources.recorded, address, validator: validator, through: header.through)
                    }
                    guard header.kind == .changes else {
                        failures[address] = "\(address): a numbered bundle must be a change bundle"
                        continue
                    }
                    if token.covers(header.through) {
                        // Nothing to apply, but a downgraded copy is still reported.
                        try mappingErrors {
                            try database.read { db in
                                try Self.checkNotDowngraded(
                                    db, header: header, encrypted: held.cameEncrypted(address) ?? encrypted,
                                    path: address)
                            }
                        }
                        failures[address] = nil
                        try held.release(address)
                        continue
                    }
                    local = try sources.localPath(of: address)
                    let summary = try importBundle(at: local, key: key, cameEncrypted: held.cameEncrypted(address))
                    if summary.waitingFor != nil {
                        failures[address] = nil
                        continue
                    }
                    if !summary.alreadyApplied { imported.append(summary) }
                    progress = true
                    failures[address] = nil
                } catch let error as ExchangeError {
                    if case .missingPrerequisites = error { waiting.append(address) }
                    failures[address] = error.naming(local, as: address).description
                }
            }
            pending = waiting
        }
        return pending
    }

    /// A peer's snapshot this store needs: one that holds something the store lacks, from a peer
    /// whose remaining bundles do not start where the store's history of that peer's folder ends.
    private func snapshotToCatchUp(
        in exchange: ExchangeFolder, recorded: String, excluding used: Set<ExchangeFolder.File>, key: KeyFile
    ) throws -> ExchangeFolder.File? {
        let token = try currentToken()
        var best: (ExchangeFolder.File, History.Token)?
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            let file = ExchangeFolder.File(replica: replica, name: ExchangeFolder.snapshotName)
            guard !used.contains(file), let entry = try exchange.entry(file.name, of: replica) else { continue }
            let address = exchange.address(of: file)
            if let validator = entry.validator, let known = try remoteThrough(recorded, address, validator: validator),
                token.covers(known)
            {
                continue
            }
            guard let (_, header, _) = try? exchange.header(of: file, identity: key.envelopeIdentity),
                header.kind == .snapshot
            else { continue }
            if let validator = entry.validator {
                try rememberRemote(recorded, address, validator: validator, through: header.through)
            }
            guard !token.covers(header.through) else { continue }
            let first = try exchange.bundles(of: replica).first.flatMap {
                try? exchange.header(of: $0.file, identity: key.envelopeIdentity).header
            }
            if let first, token.covers(first.since) { continue }
            if best == nil || header.through.covers(best!.1) { best = (file, header.through) }
        }
        return best?.0
    }

    /// The `through` token of a file of a server's exchange folder, as read when it had `validator`.
    func remoteThrough(_ recorded: String, _ address: String, validator: String) throws -> History.Token? {
        try mappingErrors {
            try database.read { db in
                try RemoteFiles.through(db, location: recorded, file: address, validator: validator)
            }
        }
    }

    func rememberRemote(_ recorded: String, _ address: String, validator: String, through: History.Token) throws {
        try mappingErrors {
            try database.write { db in
                try RemoteFiles.remember(db, location: recorded, file: address, validator: validator, through: through)
            }
        }
    }

    /// Writes `<id>/watermark.tmw`: a signed bundle of kind watermark whose `through` token is what
    /// this replica has applied. Replaced atomically. Returns its address.
    func writeWatermark(in exchange: ExchangeFolder, key: KeyFile) throws -> String {
        let mine = replica.id.description
        try exchange.transport.createFolder(mine)
        exchange.removeAbandonedTemporaries(of: replica.id)
        let temporary = exchange.transport.temporaryFile(for: mine)
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let token = try currentToken()
        _ = try exportBundle(since: token, to: temporary, key: key, kind: .watermark)
        try exchange.transport.replace(ExchangeFolder.watermarkName, in: mine, with: temporary)
        return exchange.transport.address(of: ExchangeFolder.watermarkName, in: mine)
    }
}

/// The bundles a pull reads: files of the exchange folder, by address, beside held copies, which
/// are local files named by their path.
private struct PullSources {
    let exchange: ExchangeFolder
    /// The exchange folder as this replica records it.
    let recorded: String
    private var files: [String: ExchangeFolder.File] = [:]
    private var validators: [String: String] = [:]
    /// The exchange folder's bundles, in the order listed.
    private(set) var order: [String] = []

    init(exchange: ExchangeFolder, recorded: String) {
        self.exchange = exchange
        self.recorded = recorded
    }

    mutating func add(_ file: ExchangeFolder.File, validator: String?) {
        let address = exchange.address(of: file)
        files[address] = file
        validators[address] = validator
        order.append(address)
    }

    /// What tells whether a file on a server changed since it was read; nil for local files.
    func validator(of address: String) -> String? { validators[address] }

    func header(of address: String, identity: Curve25519.KeyAgreement.PrivateKey?) throws -> (
        sender: Replica.ID, header: BundleHeader, encrypted: Bool
    ) {
        if let file = files[address] { return try exchange.header(of: file, identity: identity) }
        return try ExchangeFolder.header(of: address, identity: identity)
    }

    /// A local file with all of the bundle's bytes.
    func localPath(of address: String) throws -> String {
        if let file = files[address] { return try exchange.localPath(of: file) }
        return address
    }
}
