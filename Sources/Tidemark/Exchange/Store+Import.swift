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
        /// Changes newly applied (for a snapshot: row states merged, tombstones and Tidemark's own
        /// tables included).
        public var appliedChanges: Int
        /// For a snapshot: the live rows of the app's tables it holds, as a user counts them; 0 for
        /// a change bundle.
        public var snapshotRows = 0
        /// Transactions the store already held.
        public var skippedTransactions: Int
        /// Whether the whole bundle was already present (nothing changed).
        public var alreadyApplied: Bool { appliedTransactions == 0 && appliedChanges == 0 }
        /// The bundle's header.
        public var header: BundleHeader
        /// The user tables whose rows the import inserted, updated or deleted — by merge, conflict
        /// resolution, a foreign-key action of those, or the app's own triggers on a changed table
        /// (tables that reference a changed table, or that such a trigger names, are counted whether
        /// or not a row of theirs changed). Empty when nothing changed.
        public var changedTables: Set<String> = []
        /// When the bundle needs a schema version this store has not made: that version. The
        /// bundle was verified and is held in the store, unapplied, until the store makes the same
        /// migration; a later `pull` applies it.
        public var waitingFor: Schema.Version?
        /// Schema versions the store took on without a migration, because its tables already had
        /// what they add (a store created from the app's newer schema).
        public var adoptedVersions: [Schema.Version] = []
    }

    /// Verifies and applies a bundle in one SQLite transaction, committed only once the whole file
    /// has verified: all of it or nothing. Importing a bundle twice changes nothing. Imported
    /// transactions keep their origin, sequence number and metadata, so this store relays them
    /// onward.
    ///
    /// A bundle written under a schema version this store has not made yet is verified and held
    /// in the store, unapplied (`ImportSummary.waitingFor`); one written after a different
    /// migration from the same version is refused (`ExchangeError.schemaFork`).
    ///
    /// An encrypted file (Protocol/encryption.md) needs `key`, this replica's key file, to be
    /// opened. A file in clear whose sender had seen the group turn encryption on is refused as a
    /// downgrade (`ExchangeError.downgraded`).
    ///
    /// Applied by hand, a bundle is a pull: a member that finds itself retired rejoins
    /// (Protocol/pruning.md §1.2), unless a pull found this store to be an older copy of itself.
    public func importBundle(at path: String, key: KeyFile? = nil) throws -> ImportSummary {
        let summary = try importBundle(at: path, key: key, cameEncrypted: nil)
        if summary.waitingFor == nil, try mappingErrors({ try database.read(Self.restoredFromOlderCopy) }) == nil {
            try rejoinIfRetired()
        }
        return summary
    }

    /// `cameEncrypted`: for a copy of a bundle this store held (`HeldCopies`), which it keeps
    /// decrypted, whether the bundle came encrypted; nil for any other file.
    ///
    /// The file is read once: its header is checked first, then its records are verified as they
    /// apply, inside the import's transaction, which rolls back when a record, a chain or the
    /// signature fails at the end. A bundle to hold for a schema version is verified whole first.
    func importBundle(at path: String, key: KeyFile?, cameEncrypted: Bool?) throws -> ImportSummary {
        if let key, key.publicKey != publicKey { throw ExchangeError.wrongKey(path: key.path) }
        let identity = key?.envelopeIdentity
        let local = try mappingErrors { try database.read { db in try ImportContext(db: db, store: self) } }
        let opened = try open(path, against: local, identity: identity)
        let imported: (ImportSummary, sender: Replica.ID)
        if case .hold = opened.plan {
            opened.source.close()
            imported = try importVerifiedWhole(path, against: local, identity: identity, cameEncrypted: cameEncrypted)
        } else {
            defer { opened.source.close() }
            imported = try importWhileVerifying(
                opened, from: path, against: local, identity: identity,
                encrypted: cameEncrypted ?? opened.source.encrypted)
        }
        let (summary, sender) = imported
        if summary.waitingFor != nil { return summary }
        // The sender held everything up to the bundle's `through` token when it signed it.
        if sender != replica.id {
            try noteWatermark(summary.header.through, of: sender, signedAt: summary.header.created)
        }
        return summary
    }

    /// Applies an opened bundle while reading the rest of it, in one write transaction. A refusal
    /// met while applying, before the whole file was read, gives way to the file's own defect when
    /// it has one, as if the file had been verified whole first.
    private func importWhileVerifying(
        _ opened: OpenedBundle, from path: String, against local: ImportContext,
        identity: Curve25519.KeyAgreement.PrivateKey?, encrypted: Bool
    ) throws -> (ImportSummary, sender: Replica.ID) {
        try sealForeignWrites()
        do {
            let summary = try mappingErrors {
                try writeImmediately { db in
                    try applyWhileVerifying(opened, from: path, encrypted: encrypted, identity: identity, db)
                }
            }
            return (summary, opened.decoder.sender)
        } catch let error as ExchangeError where error.isDamage {
            throw error
        } catch {
            _ = try verify(path, against: local, identity: identity)
            throw error
        }
    }

    /// Inside the import's write transaction: applies the opened bundle as it reads it (or only
    /// reads it, when the store holds all of it already), then checks what needs the whole file
    /// verified. Rechecked against the state under the write lock: another process may have
    /// imported, or migrated, meanwhile.
    private func applyWhileVerifying(
        _ opened: OpenedBundle, from path: String, encrypted: Bool, identity: Curve25519.KeyAgreement.PrivateKey?,
        _ db: Database
    ) throws -> ImportSummary {
        _ = try sealForeign(db)
        let current = try ImportContext(db: db, store: self)
        let header = opened.decoder.header
        try current.checkTrust(opened.decoder, path: path)
        let plan = try current.schemaPlan(header, path: path)
        if case .hold = plan {
            // The store's schema changed since the file was opened: verify it whole, then hold it.
            let (verified, _, _) = try verify(path, against: current, identity: identity)
            return try applyVerified(verified, from: path, bytes: nil, encrypted: encrypted, identity: identity, db)
        }
        try current.checkSchema(header, plan: plan, path: path)
        var summary: ImportSummary
        let verified: VerifiedBundle
        var adopted: [Schema.Version] = []
        if current.token.covers(header.through) && current.holdsAll(header) {
            verified = try Self.readToEnd(opened.decoder, path: path)
            summary = ImportSummary(
                path: path, sender: header.senderName, appliedTransactions: 0, appliedChanges: 0,
                skippedTransactions: verified.transactionCount, header: header)
        } else {
            var context = current
            if case .adopt(let versions, let registrations) = plan {
                adopted = try SchemaLineage.adopt(db, versions, registrations: registrations, store: self)
                context = try ImportContext(db: db, store: self)
            }
            let applier = BundleApplier(db: db, store: self, context: context, path: path)
            (summary, verified) =
                header.kind == .snapshot ? try applier.applySnapshot(opened.decoder) : try applier.apply(opened.decoder)
        }
        try current.checkOwnHistory(verified.header, path: path)
        try current.checkPrerequisites(verified.header, path: path)
        try HeldBundles.release(db, digest: verified.digest)
        // Judged on the setting the file leaves: a file in clear may be the one turning encryption off.
        try Self.checkNotDowngraded(db, header: verified.header, encrypted: encrypted, path: path)
        summary.adoptedVersions = adopted
        return summary
    }

    /// Imports a bundle verified whole first: one to hold for a schema version this store lacks
    /// (which it keeps as verified), or to apply if the store made that version meanwhile.
    private func importVerifiedWhole(
        _ path: String, against local: ImportContext, identity: Curve25519.KeyAgreement.PrivateKey?,
        cameEncrypted: Bool?
    ) throws -> (ImportSummary, sender: Replica.ID) {
        let (verified, plan, arrivedEncrypted) = try verify(path, against: local, identity: identity)
        let encrypted = cameEncrypted ?? arrivedEncrypted
        var bytes: [UInt8]?
        if case .hold = plan { bytes = try heldBytes(path, verified, identity: identity) }
        try sealForeignWrites()
        let summary = try mappingErrors {
            try writeImmediately { db in
                try applyVerified(verified, from: path, bytes: bytes, encrypted: encrypted, identity: identity, db)
            }
        }
        return (summary, verified.sender)
    }

    /// Inside the import's write transaction: holds the verified bundle for a schema version this
    /// store lacks, or applies it (adopting the versions its tables already satisfy), or notes that
    /// it holds all of it already. Rechecked against the state under the write lock.
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
        // The store made the version meanwhile: read the file again, applying it as it is read.
        let source = try ExchangeSource(path: path, identity: identity)
        defer { source.close() }
        let opened = try OpenedBundle(source: source, path: path)
        guard opened.decoder.header == verified.header else {
            throw ExchangeError.cannotRead(path: path, reason: "the file changed while it was being imported")
        }
        return try applyWhileVerifying(opened, from: path, encrypted: encrypted, identity: identity, db)
    }

    /// Opens a bundle for import and checks its header: its kind, the trust of its sender and
    /// origins, and its schema (not against the tables when it is to be held). A header refused
    /// for what it says gives way to the file's own defect when it has one: a header altered on
    /// the way (a table's name, say) is reported as the damage it is (a record naming a table the
    /// header lacks, or the signature), not as another schema.
    private func open(_ path: String, against local: ImportContext, identity: Curve25519.KeyAgreement.PrivateKey?)
        throws -> OpenedBundle
    {
        let source = try ExchangeSource(path: path, identity: identity)
        let opened: OpenedBundle
        do {
            opened = try OpenedBundle(source: source, path: path)
        } catch {
            source.close()
            throw error
        }
        do {
            try local.checkTrust(opened.decoder, path: path)
            opened.plan = try local.schemaPlan(opened.decoder.header, path: path)
            if case .hold = opened.plan {
            } else {
                try local.checkSchema(opened.decoder.header, plan: opened.plan, path: path)
            }
            return opened
        } catch let error as ExchangeError where !error.isDamage {
            defer { source.close() }
            _ = try Self.readToEnd(opened.decoder, path: path)
            throw error
        } catch {
            source.close()
            throw error
        }
    }

    /// Reads the records left in `decoder` and verifies the whole file.
    static func readToEnd(_ decoder: BundleDecoder, path: String) throws -> VerifiedBundle {
        do {
            try decoder.skipRecords()
            return try decoder.finish()
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
    }

    /// Reads a bundle end to end and checks signatures, chains, trust, schema and prerequisites
    /// without touching the store. A bundle to hold is not checked against the tables or for
    /// prerequisites: that waits until it can apply.
    func verify(_ path: String, against local: ImportContext, identity: Curve25519.KeyAgreement.PrivateKey?) throws
        -> (VerifiedBundle, SchemaPlan, encrypted: Bool)
    {
        let opened = try open(path, against: local, identity: identity)
        defer { opened.source.close() }
        let verified = try Self.readToEnd(opened.decoder, path: path)
        try local.checkOwnHistory(verified.header, path: path)
        if case .hold = opened.plan {} else { try local.checkPrerequisites(verified.header, path: path) }
        return (verified, opened.plan, opened.source.encrypted)
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
