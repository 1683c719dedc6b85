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
    }

    /// Verifies a bundle completely, then applies it in one SQLite transaction: all of it or
    /// nothing. Importing a bundle twice changes nothing. Imported transactions keep their origin,
    /// sequence number and metadata, so this store relays them onward.
    public func importBundle(at path: String) throws -> ImportSummary {
        let local = try mappingErrors { try database.read { db in try ImportContext(db: db, store: self) } }
        let verified = try verify(path, against: local)
        try sealForeignWrites()
        let summary: ImportSummary = try mappingErrors {
            try database.writeWithoutTransaction { db in
                var summary: ImportSummary!
                try db.inTransaction(.immediate) {
                    _ = try sealForeign(db)
                    // Recheck against the state under the write lock: another process may have imported meanwhile.
                    let current = try ImportContext(db: db, store: self)
                    try current.checkPrerequisites(verified.header, path: path)
                    if current.token.covers(verified.header.through) && current.holdsAll(verified.header) {
                        summary = ImportSummary(
                            path: path, sender: verified.header.senderName, appliedTransactions: 0, appliedChanges: 0,
                            skippedTransactions: verified.transactionCount, header: verified.header)
                        return .commit
                    }
                    let applier = BundleApplier(db: db, store: self, context: current, path: path)
                    summary = verified.header.kind == .snapshot ? try applier.applySnapshot(expected: verified) : try applier.apply(expected: verified)
                    return .commit
                }
                return summary
            }
        }
        // The sender held everything up to the bundle's `through` token when it signed it.
        if verified.sender != replica.id {
            try noteWatermark(summary.header.through, of: verified.sender, signedAt: summary.header.created)
        }
        return summary
    }

    /// Reads a bundle end to end and checks signatures, chains, trust, schema and prerequisites
    /// without touching the store.
    func verify(_ path: String, against local: ImportContext) throws -> VerifiedBundle {
        let source = try FileSource(path: path)
        defer { source.close() }
        do {
            let decoder = try BundleDecoder(source)
            guard decoder.header.kind != .watermark else { throw ExchangeError.notImportable(path: path, kind: "a watermark") }
            try local.checkTrust(decoder, path: path)
            try local.checkSchema(decoder.header, path: path)
            try decoder.skipRecords()
            let verified = try decoder.finish()
            try local.checkOwnHistory(verified.header, path: path)
            try local.checkPrerequisites(verified.header, path: path)
            return verified
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
    }

    /// Decodes and verifies a bundle without any store (`sync inspect`).
    public static func inspectBundle(at path: String, transactions: (History.TransactionHeader, [History.Change]) throws -> Void)
        throws -> VerifiedBundle
    {
        let source = try FileSource(path: path)
        defer { source.close() }
        do {
            let decoder = try BundleDecoder(source)
            if decoder.header.kind != .changes { try decoder.skipRecords() }
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

/// The local facts an import is checked against.
struct ImportContext {
    let own: Replica.ID
    let token: History.Token
    let trusted: [Replica.ID: String]
    let tables: [String: TrackedTable]
    /// Per origin: (max_seq, chain hash at max_seq if known).
    let heads: [Replica.ID: (Int64, [UInt8]?)]

    init(db: Database, store: Store) throws {
        try store.registrations.refresh(db)
        own = store.replica.id
        token = try Store.currentToken(db)
        var trusted = [own: store.replica.name]
        for peer in try Store.peers(db) { trusted[peer.id] = peer.name }
        self.trusted = trusted
        tables = Dictionary(uniqueKeysWithValues: store.replicatedTables.map { ($0.name, $0) })
        var heads: [Replica.ID: (Int64, [UInt8]?)] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT replica, max_seq, head FROM tidemark_replicas") {
            heads[Replica.ID(bytes: [UInt8](row[0] as Data))!] = (row[1], (row[2] as Data?).map { [UInt8]($0) })
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

    func checkSchema(_ header: BundleHeader, path: String) throws {
        for table in header.tables {
            guard let local = tables[table.name] else {
                throw ExchangeError.schemaMismatch(path: path, table: table.name, detail: "is not tracked here")
            }
            if local.keyColumns != table.keyColumns {
                throw ExchangeError.schemaMismatch(
                    path: path, table: table.name,
                    detail: "has key (\(local.keyColumns.joined(separator: ", "))) here but (\(table.keyColumns.joined(separator: ", "))) in the bundle")
            }
            // Written under an older schema (fewer columns) applies: the columns it does not name
            // keep their values. Columns this store does not have yet wait for its migration.
            let unknown = table.columns.filter { local.index(of: $0) == nil }
            if !unknown.isEmpty {
                throw ExchangeError.schemaMismatch(
                    path: path, table: table.name,
                    detail: "carries column(s) \(unknown.map { "'\($0)'" }.joined(separator: ", ")) this store does not have: "
                        + "it was written after a migration this store has not made yet")
            }
        }
    }

    /// A bundle holding our own transactions beyond what we hold means this store is an old copy.
    func checkOwnHistory(_ header: BundleHeader, path: String) throws {
        let have = token[own]
        if header.through[own] > have || header.ranges.contains(where: { $0.origin == own && $0.last > have }) {
            throw ExchangeError.restoredFromOlderCopy(path: path, have: have, bundleHas: max(header.through[own], header.ranges.map(\.last).max() ?? 0))
        }
    }

    func checkPrerequisites(_ header: BundleHeader, path: String) throws {
        var missing: [String] = []
        var needed = header.since
        for range in header.ranges { needed[range.origin] = max(needed[range.origin], range.first - 1) }
        for (origin, sequence) in needed.sequences.sorted(by: { $0.key < $1.key }) where token[origin] < sequence {
            let name = trusted[origin] ?? origin.short
            missing.append(token[origin] + 1 == sequence ? "\(name) #\(sequence)" : "\(name) #\(token[origin] + 1)..#\(sequence)")
        }
        if !missing.isEmpty { throw ExchangeError.missingPrerequisites(path: path, missing: missing.joined(separator: ", ")) }
    }

    func holdsAll(_ header: BundleHeader) -> Bool { header.ranges.allSatisfy { token[$0.origin] >= $0.last } }
}

