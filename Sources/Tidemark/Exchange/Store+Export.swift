import Crypto
import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// What an export wrote.
    public struct ExportSummary: Sendable {
        /// The bundle file.
        public var path: String
        /// The prerequisites: what the receiver was assumed to hold.
        public var since: History.Token
        /// This store's token when the bundle was written.
        public var through: History.Token
        /// Transactions written.
        public var transactionCount: Int
        /// Changes written.
        public var changeCount: Int
        /// The file's size.
        public var bytes: Int
        /// What the file is: a change bundle, or a snapshot (then `changeCount` counts row
        /// states and `transactionCount` is 0).
        public var kind: BundleFormat.Kind = .changes
        /// Why `exportWhatPeerLacks` wrote a snapshot rather than a change bundle; nil otherwise.
        public var snapshotReason: SnapshotReason?
    }

    /// Why what a peer lacks went as a snapshot (`exportWhatPeerLacks`).
    public enum SnapshotReason: Sendable, Hashable {
        /// This store no longer has the history after the peer's token (`historyTokenExpired`).
        case historyPruned
        /// That history holds a change too large for a bundle record (`ExchangeError.rowTooLarge`).
        case changeTooLarge
    }

    /// Writes what a peer holding `since` lacks: the change bundle `exportBundle` writes when this
    /// store still has the history after `since`, or else a snapshot (`exportSnapshot`), which
    /// brings the peer to this store's state without that history — a peer back from a long
    /// absence, one whose token points into history this store itself only knows from a
    /// snapshot, or one that lacks a change too large for a bundle (the row has been made smaller
    /// since, or the snapshot fails the same way). `ExportSummary.kind` says which was written.
    public func exportWhatPeerLacks(
        since: History.Token, to path: String, key: KeyFile, readableBy peer: Replica.ID? = nil
    ) throws -> ExportSummary {
        func snapshot(_ reason: SnapshotReason) throws -> ExportSummary {
            var summary = try exportSnapshot(to: path, key: key, readableBy: peer)
            summary.snapshotReason = reason
            return summary
        }
        // Syncing by hand is syncing: a member that finds itself retired rejoins, and the file
        // carries that to the peer (Protocol/pruning.md §1.2). Not an older copy of this store.
        try checkNotRestored()
        try rejoinIfRetired()
        do {
            return try exportBundle(since: since, to: path, key: key, readableBy: peer)
        } catch StoreError.historyTokenExpired {
            return try snapshot(.historyPruned)
        } catch ExchangeError.rowTooLarge {
            return try snapshot(.changeTooLarge)
        }
    }

    /// Writes every transaction `since` does not cover to a signed, compressed bundle at `path`
    /// (Protocol/bundle.md), in the order this store applied them. The file appears atomically:
    /// it is written under a temporary name in the same folder and renamed. Streams: memory does
    /// not grow with the number of changes.
    ///
    /// Throws `historyTokenExpired` if the bundle would need pruned history, `foreignToken`
    /// if `since` is not from this store's group (it claims transactions of this replica that the
    /// store never made, or names only replicas it neither holds history of nor trusts), and
    /// `ExchangeError.rowTooLarge` if a change to write holds more TEXT and BLOB bytes than a
    /// bundle record may carry (then no file is written), and `ExchangeError.cannotWrite` if a file
    /// at `path` is not a bundle: an export replaces only an earlier export.
    ///
    /// When the group encrypts (`setEncryption(_:)`), the file is encrypted for this replica and
    /// `peer`, or, without one, for every trusted peer (Protocol/encryption.md §4).
    public func exportBundle(
        since: History.Token, to path: String, key: KeyFile, kind: BundleFormat.Kind = .changes,
        readableBy peer: Replica.ID? = nil
    ) throws -> ExportSummary {
        guard key.publicKey == publicKey else { throw ExchangeError.wrongKey(path: key.path) }
        try Self.checkReplaceable(path)
        try checkNotRestored()
        try sealForeignWrites()
        let own = replica.id
        // Our chain hash where the receiver's copy of our history ends.
        let (ownPrevious, digest) = try mappingErrors {
            try database.write { db in
                // A token this store cannot serve is refused before the fold writes anything. A
                // watermark serves none: its token may be one a prune in another process has
                // passed since it was read.
                if kind != .watermark { try HistoryQuery.checkUsable(since, own: own, db) }
                // Every own change needs its generation before it can be encoded.
                try LocalFold(db: db, store: self).run()
                // A watermark carries the digest of the rows at its token (Protocol/exchange.md §8).
                let digest =
                    kind == .watermark
                    ? (
                        try Self.rowDigest(db, tables: replicatedTables), try Self.currentToken(db),
                        try SchemaLineage.position(db)
                    ) : nil
                // A watermark carries no transactions: its own are not hashed for it, which would
                // fix the version they are labeled with before any of them is published.
                return (kind == .watermark ? nil : try Chains(db: db, store: self).own(through: since[own]), digest)
            }
        }
        let temporary = FilePaths.folder(of: path) + "/.tmp-\(UUID().uuidString)"
        let sink = try Self.sink(temporary, for: path)
        var summary: ExportSummary
        var ownHead: (sequence: Int64, attestation: Attestation)?
        do {
            (summary, ownHead) = try mappingErrors {
                try database.read { db in
                    let plan = try ExportPlan(
                        db: db, store: self, since: since, ownPrevious: ownPrevious, withRanges: kind != .watermark)
                    // A digest describes its token and schema version only: one written or
                    // migrated meanwhile is left out.
                    return try write(
                        plan, kind: kind,
                        digest: digest.flatMap { $0.1 == plan.through && $0.2 == plan.schemaPosition ? $0.0 : nil },
                        into: sink,
                        key: key, encryptedFor: try envelopeRecipients(db, for: peer), path: path)
                }
            }
            try sink.close()
            summary.bytes = sink.bytesWritten
            try FileManager.default.moveItemReplacing(at: temporary, to: path)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw ExchangeError.exporting(error, to: path)
        }
        if let ownHead {
            try mappingErrors {
                try database.write { db in
                    try Chains(db: db, store: self).recordOwnAttestation(
                        ownHead.attestation, sequence: ownHead.sequence)
                }
            }
        }
        return summary
    }

    /// The sink of a file written under `temporary` and published as `path`; a folder that cannot
    /// take it is reported for `path`, the name the caller gave.
    static func sink(_ temporary: String, for path: String) throws -> ExchangeSink {
        do {
            return try ExchangeSink(path: temporary)
        } catch ExchangeError.cannotWrite(let written, let reason) where written == temporary {
            throw ExchangeError.cannotWrite(path: path, reason: reason)
        }
    }

    /// Refuses to write a bundle over a file at `path` that is not one (plain or encrypted): an
    /// export replaces an earlier export, never a store, a key or a document given by mistake.
    static func checkReplaceable(_ path: String) throws {
        guard (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType == .typeRegular,
            let handle = FileHandle(forReadingAtPath: path)
        else { return }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 21)) ?? Data())
        let encrypted = Array("age-encryption.org/v1".utf8)
        guard !head.isEmpty, !head.starts(with: BundleFormat.magic), !head.starts(with: encrypted) else { return }
        throw ExchangeError.cannotWrite(
            path: path,
            reason: "a file that is not a bundle is there, and an export replaces only an earlier one: "
                + "remove it or choose another name")
    }
}

extension Store {
    /// Encodes what `plan` holds into `sink`, encrypted for `recipients` when there are any;
    /// returns the summary (without the size) and this replica's new attestation, if it made one.
    fileprivate func write(
        _ plan: ExportPlan, kind: BundleFormat.Kind, digest: RowDigest?, into sink: ExchangeSink, key: KeyFile,
        encryptedFor recipients: [Curve25519.KeyAgreement.PublicKey]?, path: String
    ) throws -> (ExportSummary, (sequence: Int64, attestation: Attestation)?) {
        let header = BundleHeader(
            kind: kind, senderName: replica.name,
            // Not checked by readers (bundle.md §3.3): the last reading will do when none follows it.
            created: HLCTimestamp.next(after: plan.clock, now: options.clock.nowMilliseconds()) ?? plan.clock,
            since: kind == .watermark ? plan.through : plan.since, through: plan.through,
            tables: kind == .watermark ? plan.currentTables : plan.tables,
            ranges: kind == .watermark ? [] : plan.ranges, lineage: kind == .watermark ? [] : plan.lineage,
            schemaRuns: kind == .watermark ? [] : plan.schemaRuns, digest: digest)
        try sink.encrypt(for: recipients)
        var encoder = try BundleEncoder(sink: sink, signingKey: key.privateKey, header: header)
        let counts = kind == .watermark ? (0, 0) : try plan.writeTransactions(into: &encoder)
        var ownHead: (sequence: Int64, attestation: Attestation)?
        _ = try encoder.finish { origin, sequence, head in
            if origin == replica.id {
                let attestation = try Attestation.sign(origin: key.privateKey, sequence: sequence, head: head)
                ownHead = (sequence, attestation)
                return attestation
            }
            guard let stored = plan.heads[origin], stored.head == head else {
                throw ExchangeError.historyFork(path: path, origin: origin.description, sequence: sequence)
            }
            return Attestation(origin: origin, sequence: sequence, head: head, signature: stored.signature)
        }
        let summary = ExportSummary(
            path: path, since: plan.since, through: plan.through, transactionCount: counts.0, changeCount: counts.1,
            bytes: 0)
        return (summary, ownHead)
    }
}

/// What an export will contain, read in one read transaction.
struct ExportPlan {
    let db: Database
    let store: Store
    let since: History.Token
    var through = History.Token.zero
    var ranges: [BundleHeader.OriginRange] = []
    var heads: [Replica.ID: (head: [UInt8], signature: [UInt8])] = [:]
    var clock = HLCTimestamp.zero
    /// The last own transaction the export carries: the last one folded.
    var ownLast: Int64 = 0
    /// The schema versions the transactions need (Protocol/schema.md §4), where each origin's
    /// transactions move to a later one, and the tables as they were under the newest needed.
    var lineage: [Schema.Version] = []
    var schemaRuns: [BundleHeader.SchemaRun] = []
    var tables: [BundleHeader.TableSchema] = []
    /// What each table and column was called under each version the transactions were written under.
    var naming = SchemaNaming(registrations: [], lineage: [])
    /// The position of the store's current schema version.
    var schemaPosition = 0
    /// The tables as the current version names them, as a watermark lists them (its row digest
    /// names them so: Protocol/exchange.md §8.3).
    var currentTables: [BundleHeader.TableSchema] { naming.header(positions: schemaPosition...schemaPosition) }

    /// `withRanges` false for a watermark, which carries no transactions: `ownPrevious` is then
    /// not needed (nor computed: it would fix the version of own transactions not published).
    init(db: Database, store: Store, since: History.Token, ownPrevious: [UInt8]?, withRanges: Bool = true) throws {
        self.db = db
        self.store = store
        self.since = since
        clock = try ReplicaState.fetch(db).lastTimestamp
        through = try Store.currentToken(db)
        let own = store.replica.id
        let ownKey = store.publicKey
        if withRanges { try HistoryQuery.checkUsable(since, own: own, db) }
        // Only folded transactions carry their changes' generations. A write sealed after this
        // export's fold (another process, between the fold's transaction and this one) waits for
        // the next export.
        ownLast = min(
            through[own], try ReplicaState.fetch(db).foldedSequence)
        // The receiver ends with what it had and what the bundle carries (a token it was given may
        // already name own transactions past the fold).
        through[own] = max(ownLast, since[own])
        for row in try Row.fetchAll(
            db, sql: "SELECT replica, max_seq, pruned_through, public_key, head, head_signature FROM tidemark_replicas")
        {
            let origin = try row.decode(Replica.ID.self, atIndex: 0)
            let maxSeq: Int64 = origin == own ? min(row[1], ownLast) : row[1]
            let pruned: Int64 = row[2]
            if let head = row[4] as Data?, let signature = row[5] as Data? {
                heads[origin] = ([UInt8](head), [UInt8](signature))
            }
            guard withRanges, maxSeq > since[origin] else { continue }
            let first = since[origin] + 1
            let previous = origin == own ? ownPrevious : try Chains(db: db, store: store).held(origin, after: first - 1)
            let key = origin == own ? ownKey : (row[3] as Data?).map { [UInt8]($0) }
            guard let previous, let key else {
                throw StoreError.historyTokenExpired(token: since.description, replica: origin, prunedThrough: pruned)
            }
            ranges.append(BundleHeader.OriginRange(publicKey: key, first: first, last: maxSeq, previous: previous))
        }
        let versions = try SchemaLineage.fetch(db)
        if !versions.isEmpty {
            let (conditions, arguments) = selection()
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT replica, min(seq), schema FROM tidemark_transactions WHERE \(conditions) AND schema > 0 GROUP BY replica, schema",
                arguments: arguments)
            {
                schemaRuns.append(
                    .init(origin: try row.decode(Replica.ID.self, atIndex: 0), first: row[1], position: row[2]))
            }
        }
        lineage = Array(versions.prefix(schemaRuns.map(\.position).max() ?? 0))
        // Each transaction names tables and columns as its version did: the header lists every
        // name the versions up to the newest needed use (the initial schema's too, for transactions
        // written under it).
        naming = SchemaNaming(registrations: store.registrations.all, lineage: versions)
        schemaPosition = versions.count
        tables = naming.header(positions: 0...lineage.count)
    }

    /// The WHERE clause and arguments that select the transactions the export carries.
    private func selection() -> (String, StatementArguments) {
        var conditions = "(replica <> ? OR seq <= ?)"
        var arguments: [any DatabaseValueConvertible] = [store.replica.id, ownLast]
        if let after = HistoryQuery.notCovered(by: since) {
            conditions += " AND " + after.sql
            arguments += after.arguments
        }
        return (conditions, StatementArguments(arguments))
    }

    /// Streams the transactions into the encoder; returns (transactions, changes).
    func writeTransactions<S: ByteSink>(into encoder: inout BundleEncoder<S>) throws -> (Int, Int) {
        let (conditions, arguments) = selection()
        let decoder = try ChangeDecoder(db, store: store, naming: naming, inNameOrder: true)
        let changes = try RawStatement(
            db, sql: HistoryQuery.changesOfTransaction(selecting: decoder.selectList))
        let transactions = try Row.fetchCursor(
            db,
            sql: """
                SELECT replica, seq, hlc, author, context, pid, first_change, last_change, schema FROM tidemark_transactions
                WHERE \(conditions) ORDER BY id
                """,
            arguments: arguments)
        var counts = (0, 0)
        while let row = try transactions.next() {
            let first: Int64 = row[6]
            let last: Int64 = row[7]
            try encoder.beginTransaction(
                origin: try row.decode(Replica.ID.self, atIndex: 0), sequence: row[1],
                timestamp: HLCTimestamp(packed: row[2]),
                author: row[3], contextName: row[4], processID: row[5], changeCount: Int(max(0, last - first + 1)))
            changes.reset()
            try changes.bind(first, at: 1)
            try changes.bind(last, at: 2)
            while try changes.step() {
                guard let decoded = decoder.decode(changes, position: row[8], whole: true) else {
                    let origin = try row.decode(Replica.ID.self, atIndex: 0)
                    let name =
                        origin == store.replica.id
                        ? store.replica.name : try Store.peers(db).first { $0.id == origin }?.name ?? origin.short
                    throw ExchangeError.unnamedHistory(origin: name, sequence: row[1], position: row[8])
                }
                try encoder.add(decoded)
                counts.1 += 1
            }
            counts.0 += 1
        }
        return counts
    }
}
