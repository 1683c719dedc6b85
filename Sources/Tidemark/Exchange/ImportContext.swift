import Foundation
import GRDB
import TidemarkCore

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
                        + "it was written after a migration this store has not made yet, or before the migrations "
                        + "that a store created from the app's newer schema holds already")
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
        for (origin, sequence) in header.prerequisites.sequences.sorted(by: { $0.key < $1.key })
        where token[origin] < sequence {
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
