import Crypto
import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// What an import did.
    public struct ImportSummary: Sendable, Hashable {
        /// The bundle file.
        public var path: String
        /// The sender's name as the bundle states it.
        public var sender: String
        /// Transactions newly applied.
        public var appliedTransactions: Int
        /// Changes newly applied (for a snapshot: row states merged).
        public var appliedChanges: Int
        /// Transactions the store already held.
        public var skippedTransactions: Int
        /// Whether the whole bundle was already present (nothing changed).
        public var alreadyApplied: Bool { appliedTransactions == 0 && appliedChanges == 0 }
        /// The bundle's header.
        public var header: BundleHeader
        /// The user tables whose rows the import inserted, updated or deleted — by merge, conflict
        /// resolution, or a foreign-key action of those (tables that reference a changed table are
        /// counted whether or not an action removed a row of theirs). Empty when nothing changed.
        public var changedTables: Set<String> = []
        /// When the bundle needs a schema version this store has not made: that version. The
        /// bundle was verified and is held in the store, unapplied, until the store makes the same
        /// migration; a later `pull` applies it.
        public var waitingFor: Schema.Version?
        /// Schema versions the store took on without a migration, because its tables already had
        /// what they add (a store created from the app's newer schema).
        public var adoptedVersions: [Schema.Version] = []
    }

    /// Verifies a bundle completely, then applies it in one SQLite transaction: all of it or
    /// nothing. Importing a bundle twice changes nothing. Imported transactions keep their origin,
    /// sequence number and metadata, so this store relays them onward.
    ///
    /// A bundle written under a schema version this store has not made yet is verified and held
    /// in the store, unapplied (`ImportSummary.waitingFor`); one written after a different
    /// migration from the same version is refused (`ExchangeError.schemaFork`).
    ///
    /// An encrypted file (Protocol/encryption.md) needs `key`, this replica's key file, to be
    /// opened. A file in clear whose sender had seen the group turn encryption on is refused as a
    /// downgrade (`ExchangeError.downgraded`).
    public func importBundle(at path: String, key: KeyFile? = nil) throws -> ImportSummary {
        try importBundle(at: path, key: key, cameEncrypted: nil)
    }

    /// `cameEncrypted`: for a copy of a bundle this store held (`HeldCopies`), which it keeps
    /// decrypted, whether the bundle came encrypted; nil for any other file.
    func importBundle(at path: String, key: KeyFile?, cameEncrypted: Bool?) throws -> ImportSummary {
        if let key, key.publicKey != publicKey { throw ExchangeError.wrongKey(path: key.path) }
        let identity = key?.envelopeIdentity
        let local = try mappingErrors { try database.read { db in try ImportContext(db: db, store: self) } }
        let (verified, plan, arrivedEncrypted) = try verify(path, against: local, identity: identity)
        let encrypted = cameEncrypted ?? arrivedEncrypted
        var bytes: [UInt8]?
        if case .hold = plan { bytes = try heldBytes(path, verified, identity: identity) }
        try sealForeignWrites()
        let summary: ImportSummary = try mappingErrors {
            try database.writeWithoutTransaction { db in
                var summary: ImportSummary!
                try db.inTransaction(.immediate) {
                    summary = try applyVerified(
                        verified, from: path, bytes: bytes, encrypted: encrypted, identity: identity, db)
                    return .commit
                }
                return summary
            }
        }
        if summary.waitingFor != nil { return summary }
        // The sender held everything up to the bundle's `through` token when it signed it.
        if verified.sender != replica.id {
            try noteWatermark(summary.header.through, of: verified.sender, signedAt: summary.header.created)
        }
        return summary
    }

    /// Inside the import's write transaction: holds the verified bundle for a schema version this
    /// store lacks, or applies it (adopting the versions its tables already satisfy), or notes that
    /// it holds all of it already. Rechecked against the state under the write lock: another
    /// process may have imported, or migrated, meanwhile.
    private func applyVerified(
        _ verified: VerifiedBundle, from path: String, bytes: [UInt8]?, encrypted: Bool,
        identity: Curve25519.KeyAgreement.PrivateKey?, _ db: Database
    ) throws -> ImportSummary {
        _ = try sealForeign(db)
        let current = try ImportContext(db: db, store: self)
        let plan = try current.schemaPlan(verified.header, path: path)
        if case .hold(let version) = plan {
            // Judged when it applies, on the setting it leaves then (encryption.md §5.2).
            let bytes = try bytes ?? heldBytes(path, verified, identity: identity)
            try HeldBundles.hold(
                db, digest: verified.digest, bytes: bytes, version: version, sender: verified.header.senderName,
                encrypted: encrypted)
            return ImportSummary(
                path: path, sender: verified.header.senderName, appliedTransactions: 0, appliedChanges: 0,
                skippedTransactions: 0, header: verified.header, waitingFor: version)
        }
        try HeldBundles.release(db, digest: verified.digest)
        // A bundle first found to need holding skipped these in `verify`.
        try current.checkSchema(verified.header, plan: plan, path: path)
        try current.checkPrerequisites(verified.header, path: path)
        if current.token.covers(verified.header.through) && current.holdsAll(verified.header) {
            try Self.checkNotDowngraded(db, header: verified.header, encrypted: encrypted, path: path)
            return ImportSummary(
                path: path, sender: verified.header.senderName, appliedTransactions: 0, appliedChanges: 0,
                skippedTransactions: verified.transactionCount, header: verified.header)
        }
        var adopted: [Schema.Version] = []
        var context = current
        if case .adopt(let versions, let registrations) = plan {
            adopted = try SchemaLineage.adopt(db, versions, registrations: registrations, store: self)
            context = try ImportContext(db: db, store: self)
        }
        let applier = BundleApplier(db: db, store: self, context: context, path: path, identity: identity)
        var summary =
            verified.header.kind == .snapshot
            ? try applier.applySnapshot(expected: verified) : try applier.apply(expected: verified)
        // Judged on the setting the file leaves: a file in clear may be the one turning encryption off.
        try Self.checkNotDowngraded(db, header: verified.header, encrypted: encrypted, path: path)
        summary.adoptedVersions = adopted
        return summary
    }

    /// Reads a bundle end to end and checks signatures, chains, trust, schema and prerequisites
    /// without touching the store. A bundle to hold is not checked against the tables or for
    /// prerequisites: that waits until it can apply.
    func verify(_ path: String, against local: ImportContext, identity: Curve25519.KeyAgreement.PrivateKey?) throws
        -> (VerifiedBundle, SchemaPlan, encrypted: Bool)
    {
        let source = try ExchangeSource(path: path, identity: identity)
        defer { source.close() }
        do {
            let decoder = try BundleDecoder(source)
            guard decoder.header.kind != .watermark else {
                throw ExchangeError.notImportable(path: path, kind: "a watermark")
            }
            try local.checkTrust(decoder, path: path)
            let plan = try local.schemaPlan(decoder.header, path: path)
            if case .hold = plan {} else { try local.checkSchema(decoder.header, plan: plan, path: path) }
            try decoder.skipRecords()
            let verified = try decoder.finish()
            try local.checkOwnHistory(verified.header, path: path)
            if case .hold = plan {} else { try local.checkPrerequisites(verified.header, path: path) }
            return (verified, plan, source.encrypted)
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
    }

    /// The bytes of a verified bundle to hold, checked to be the ones verified.
    private func heldBytes(
        _ path: String, _ verified: VerifiedBundle, identity: Curve25519.KeyAgreement.PrivateKey?
    ) throws -> [UInt8] {
        // The bundle itself, decrypted: the store keeps what it verified, not the envelope.
        var source = try ExchangeSource(path: path, identity: identity)
        defer { source.close() }
        var bytes: [UInt8] = []
        while true {
            let chunk = try source.read(1 << 20)
            if chunk.isEmpty { break }
            bytes += chunk
        }
        do {
            let decoder = try BundleDecoder(BufferSource(bytes))
            try decoder.skipRecords()
            guard try decoder.finish().digest == verified.digest else { throw BundleError.verification(.badSignature) }
        } catch {
            throw ExchangeError.cannotRead(path: path, reason: "the file changed while it was being imported")
        }
        return bytes
    }

    /// Decodes and verifies a bundle without any store (`sync inspect`): `transactions` sees each
    /// transaction of a change bundle, `rowStates` each row state of a snapshot. An encrypted
    /// file is decrypted with `key`.
    public static func inspectBundle(
        at path: String, key: KeyFile? = nil,
        transactions: (History.TransactionHeader, [History.Change]) throws -> Void,
        rowStates: ((RowState) throws -> Void)? = nil
    )
        throws -> VerifiedBundle
    {
        let source = try ExchangeSource(path: path, identity: key?.envelopeIdentity)
        defer { source.close() }
        do {
            let decoder = try BundleDecoder(source)
            if decoder.header.kind == .snapshot, let rowStates {
                while let state = try decoder.nextRowState() { try rowStates(state) }
            } else if decoder.header.kind != .changes {
                try decoder.skipRecords()
            }
            while decoder.header.kind == .changes, let head = try decoder.nextTransaction() {
                var changes: [History.Change] = []
                while let change = try decoder.nextChange() { changes.append(change) }
                try transactions(head, changes)
            }
            return try decoder.finish()
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
    }
}

/// What an import does about the schema versions a bundle needs.
enum SchemaPlan {
    /// The store has them all.
    case apply
    /// The store lacks these, but its tables already have what they change: take them on, with
    /// these registrations (which know the columns and tables the versions dropped), then apply.
    case adopt([Schema.Version], registrations: [TrackedTable])
    /// The store lacks this version (the newest needed): keep the bundle until it has it.
    case hold(Schema.Version)
}

/// The local facts an import is checked against.
struct ImportContext {
    let own: Replica.ID
    let token: History.Token
    let trusted: [Replica.ID: String]
    /// Every registration, untracked tables included.
    let registrations: [TrackedTable]
    /// What the registrations were called at each position of the lineage.
    let naming: SchemaNaming
    /// Per origin: (max_seq, chain hash at max_seq if known).
    let heads: [Replica.ID: (Int64, [UInt8]?)]
    /// The store's schema versions.
    let lineage: [Schema.Version]

    init(db: Database, store: Store) throws {
        try store.registrations.refresh(db)
        lineage = try SchemaLineage.fetch(db)
        own = store.replica.id
        token = try Store.currentToken(db)
        var trusted = [own: store.replica.name]
        for peer in try Store.peers(db) { trusted[peer.id] = peer.name }
        self.trusted = trusted
        registrations = store.registrations.all
        naming = SchemaNaming(registrations: registrations, lineage: lineage)
        var heads: [Replica.ID: (Int64, [UInt8]?)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT replica, max_seq, head FROM tidemark_replicas") {
            heads[try row.decode(Replica.ID.self, atIndex: 0)] = (row[1], (row[2] as Data?).map { [UInt8]($0) })
        }
        self.heads = heads
    }

    func checkTrust(_ decoder: BundleDecoder, path: String) throws {
        guard trusted[decoder.sender] != nil else {
            throw ExchangeError.unknownSigner(
                path: path, name: decoder.header.senderName, publicKey: Data(decoder.senderKey).base64EncodedString())
        }
        for range in decoder.header.ranges where trusted[range.origin] == nil {
            throw ExchangeError.unknownOrigin(path: path, origin: range.origin.description)
        }
    }

    /// Compares the bundle's schema lineage with the store's (Protocol/schema.md §5): the same
    /// version at every position both have, or a fork; versions the store lacks are taken on
    /// when its tables already have what they add, or else the bundle is held for them.
    func schemaPlan(_ header: BundleHeader, path: String) throws -> SchemaPlan {
        for (ours, theirs) in zip(lineage, header.lineage) where ours.id != theirs.id {
            throw ExchangeError.schemaFork(path: path, ours: ours, theirs: theirs)
        }
        let needed = header.neededSchemaPosition
        guard needed > lineage.count else { return .apply }
        let missing = Array(header.lineage[lineage.count..<needed])
        if let registrations = SchemaNaming.adopting(missing, by: registrations) {
            return .adopt(missing, registrations: registrations)
        }
        return .hold(header.lineage[needed - 1])
    }

    /// Checks the bundle's tables against the names this store's lineage gives them: each table
    /// and column must be one some version of it names (each change is checked against its own
    /// version as it applies). Columns unknown here under any version mean a sender whose schema
    /// changed outside any migration.
    func checkSchema(_ header: BundleHeader, plan: SchemaPlan, path: String) throws {
        var naming = naming
        var positions = lineage.count
        if case .adopt(let versions, let registrations) = plan {
            // As the store will name them once it has taken the versions on.
            naming = SchemaNaming(registrations: registrations, lineage: lineage + versions)
            positions += versions.count
        }
        let known = Dictionary(
            naming.header(positions: 0...positions).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for table in header.tables {
            guard let local = known[table.name] else {
                throw ExchangeError.schemaMismatch(path: path, table: table.name, detail: "is not tracked here")
            }
            if local.keyColumns != table.keyColumns {
                throw ExchangeError.schemaMismatch(
                    path: path, table: table.name,
                    detail:
                        "has key (\(local.keyColumns.joined(separator: ", "))) here but (\(table.keyColumns.joined(separator: ", "))) in the bundle"
                )
            }
            let unknown = table.columns.filter { !local.columns.contains($0) }
            if !unknown.isEmpty {
                throw ExchangeError.schemaMismatch(
                    path: path, table: table.name,
                    detail:
                        "carries column(s) \(unknown.map { "'\($0)'" }.joined(separator: ", ")) this store does not have: "
                        + "it was written after a migration this store has not made yet")
            }
        }
    }

    /// A bundle holding our own transactions beyond what we hold means this store is an old copy.
    func checkOwnHistory(_ header: BundleHeader, path: String) throws {
        let have = token[own]
        if header.through[own] > have || header.ranges.contains(where: { $0.origin == own && $0.last > have }) {
            throw ExchangeError.restoredFromOlderCopy(
                path: path, have: have, bundleHas: max(header.through[own], header.ranges.map(\.last).max() ?? 0))
        }
    }

    func checkPrerequisites(_ header: BundleHeader, path: String) throws {
        var missing: [String] = []
        var needed = header.since
        for range in header.ranges { needed[range.origin] = max(needed[range.origin], range.first - 1) }
        for (origin, sequence) in needed.sequences.sorted(by: { $0.key < $1.key }) where token[origin] < sequence {
            let name = trusted[origin] ?? origin.short
            missing.append(
                token[origin] + 1 == sequence ? "\(name) #\(sequence)" : "\(name) #\(token[origin] + 1)..#\(sequence)")
        }
        if !missing.isEmpty {
            throw ExchangeError.missingPrerequisites(path: path, missing: missing.joined(separator: ", "))
        }
    }

    func holdsAll(_ header: BundleHeader) -> Bool { header.ranges.allSatisfy { token[$0.origin] >= $0.last } }
}
