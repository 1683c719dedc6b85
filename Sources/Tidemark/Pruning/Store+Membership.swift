import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A member of this replica's sync group (itself and its trusted peers), with what it is known
    /// to have applied.
    public struct Member: Sendable {
        /// The name (this replica's own name, or the name it trusts the peer under).
        public var name: String
        /// The identity.
        public var id: Replica.ID
        /// Whether this is the local replica.
        public var isSelf: Bool
        /// Whether a replica retired it (and it has not synced since).
        public var retired: Bool
        /// The latest token it is known to have applied, from its signed watermarks and bundles.
        public var watermark: History.Token
        /// When it signed that watermark, if one is known.
        public var signedAt: HLCTimestamp?
        /// Transactions this replica holds that it lacks.
        public var behindTransactions: Int64
        /// Changes in those transactions, where history still holds them.
        public var behindChanges: Int64
        /// How many of those transactions history here still holds: the others were pruned, or
        /// came in a snapshot, and the member catches up from a snapshot.
        public var behindInHistory: Int64 = 0
        /// The timestamp of the oldest transaction it lacks, where history still holds it.
        public var lackingSince: HLCTimestamp?
        /// The bytes of the values in the changes it lacks, where history still holds them (each
        /// value as SQLite stores it as a blob: a text's UTF-8, a number's digits): what it has to
        /// receive, before bundles compress it. Counted only when `members(countingBytes:)` is
        /// asked to (it reads every change the member lacks); 0 otherwise.
        public var behindBytes: Int64 = 0
        /// How its rows compare with this replica's, by the row digest of its latest watermark.
        public var rows: RowComparison = .unknown
    }

    /// How a member's rows compare with this replica's (Protocol/exchange.md §8): known only when
    /// its latest watermark carried a row digest of this replica's current token.
    public enum RowComparison: Sendable, Equatable {
        /// It holds the same rows as this replica, at the same token.
        case same
        /// At the same token, it holds different rows in these tables.
        case differ(tables: [String])
        /// Its latest digest describes another token (this one): compare again once both have synced.
        case otherToken(History.Token)
        /// Its latest digest was made under another schema version than this store's current one
        /// (a migration renamed a table or column, or added one): compare again once both have
        /// made the same migrations.
        case otherSchema
        /// None of its watermarks carried a digest.
        case unknown
    }

    /// This replica and every trusted peer, with their watermarks and lag; with `countingBytes`,
    /// also the bytes each lacks (`Member.behindBytes`), which reads every change it lacks: for
    /// `status`, not for the prune every pull runs.
    public func members(countingBytes: Bool = false) throws -> [Member] {
        try sealForeignWritesBeforeReading()
        return try mappingErrors {
            try database.read { db in
                let token = try Self.currentToken(db)
                // Counted only when a member's latest digest is of this token.
                var digest: RowDigest?
                // Made only when a member's digest is of this token, as the digest is: the prune
                // every pull runs reads the members too.
                var fingerprint: String?
                let tables = {
                    if fingerprint == nil {
                        try self.registrations.refresh(db)
                        let position = try SchemaLineage.position(db)
                        fingerprint = Self.tablesFingerprint(
                            SchemaNaming(registrations: self.registrations.all, lineage: try SchemaLineage.fetch(db))
                                .header(positions: position...position))
                    }
                    return fingerprint!
                }
                let ours = {
                    if digest == nil {
                        digest = try Self.rowDigestReading(db, tables: self.replicatedTables, own: self.replica.id)
                    }
                    return digest!
                }
                let retired = Set(try String.fetchAll(db, sql: "SELECT id FROM tidemark_members WHERE retired = 1"))
                var result = [
                    Member(
                        name: replica.name, id: replica.id, isSelf: true,
                        retired: retired.contains(replica.id.description),
                        watermark: token, signedAt: nil, behindTransactions: 0, behindChanges: 0, lackingSince: nil)
                ]
                for peer in try Self.peers(db) {
                    let row = try Row.fetchOne(
                        db, sql: "SELECT token, signed_at FROM tidemark_watermarks WHERE replica = ?",
                        arguments: [Data(peer.id.bytes)])
                    let watermark = (row?[0] as String?).flatMap { try? History.Token(parsing: $0) } ?? .zero
                    var behind: Int64 = 0
                    var changes: Int64 = 0
                    var inHistory: Int64 = 0
                    var bytes: Int64 = 0
                    var since: HLCTimestamp?
                    for (origin, sequence) in token.sequences where watermark[origin] < sequence {
                        behind += sequence - watermark[origin]
                        if countingBytes { bytes += try Self.valueBytes(of: origin, after: watermark[origin], db) }
                        if let lag = try Row.fetchOne(
                            db,
                            sql:
                                "SELECT min(hlc), sum(last_change - first_change + 1), count(*) FROM tidemark_transactions WHERE replica = ? AND seq > ?",
                            arguments: [Data(origin.bytes), watermark[origin]]), let oldest = lag[0] as Int64?
                        {
                            changes += lag[1] ?? 0
                            inHistory += lag[2] ?? 0
                            since = min(since ?? HLCTimestamp(packed: oldest), HLCTimestamp(packed: oldest))
                        }
                    }
                    var member = Member(
                        name: peer.name, id: peer.id, isSelf: false, retired: retired.contains(peer.id.description),
                        watermark: watermark,
                        signedAt: (row?[1] as Int64?).map(HLCTimestamp.init(packed:)), behindTransactions: behind,
                        behindChanges: changes,
                        lackingSince: since, rows: try Self.compare(ours, at: token, tables: tables, with: peer.id, db))
                    member.behindBytes = bytes
                    member.behindInHistory = inHistory
                    result.append(member)
                }
                return result
            }
        }
    }

    /// The bytes of the values in `origin`'s changes after `sequence` that history holds
    /// (`Member.behindBytes`), summed a few hundred value columns to a statement.
    private static func valueBytes(of origin: Replica.ID, after sequence: Int64, _ db: Database) throws -> Int64 {
        let columns = try Bookkeeping.valueColumnCount(db)
        var total: Int64 = 0
        for start in stride(from: 0, to: columns, by: 500) {
            let sums = (start..<min(columns, start + 500)).map {
                "coalesce(sum(length(CAST(c.\(Bookkeeping.valueColumn($0)) AS BLOB))), 0)"
            }
            let row = try Row.fetchOne(
                db,
                sql: "SELECT \(sums.joined(separator: ", ")) FROM tidemark_transactions AS t "
                    + "JOIN tidemark_changes AS c ON c.id BETWEEN t.first_change AND t.last_change "
                    + "WHERE t.replica = ? AND t.seq > ?",
                arguments: [Data(origin.bytes), sequence])
            for index in 0..<sums.count { total += row?[index] ?? 0 }
        }
        return total
    }

    /// Compares this replica's row digest at `token` with the one `peer`'s latest watermark carried.
    /// `tables` gives the fingerprint of this store's tables as its current version names them.
    private static func compare(
        _ digest: () throws -> RowDigest, at token: History.Token, tables: () throws -> String, with peer: Replica.ID,
        _ db: Database
    ) throws -> RowComparison {
        guard let (theirs, at, theirTables) = try watermarkDigest(of: peer, db) else { return .unknown }
        guard at == token else { return .otherToken(at) }
        if let theirTables, try theirTables != tables() { return .otherSchema }
        let tables = try digest().differingTables(from: theirs)
        return tables.isEmpty ? .same : .differ(tables: tables)
    }

    /// Retires the trusted peer named `name`: pruning stops waiting for it. The retirement is a
    /// replicated write, so every replica agrees; the peer stays trusted, and becomes active again
    /// by itself when it next syncs.
    public func retire(peer name: String) throws {
        guard let peer = try peers().first(where: { $0.name == name }) else { throw ExchangeError.unknownPeer(name) }
        try setRetired(peer.id, true, context: "retire")
    }

    /// If some replica retired this one, makes it active again (a later write than the retirement).
    func rejoinIfRetired() throws {
        let retired = try database.read { db in
            try Bool.fetchOne(
                db, sql: "SELECT retired = 1 FROM tidemark_members WHERE id = ?", arguments: [replica.id.description])
                ?? false
        }
        if retired { try setRetired(replica.id, false, context: "rejoin") }
    }

    private func setRetired(_ id: Replica.ID, _ retired: Bool, context: String) throws {
        _ = try write(author: "tidemark", contextName: context) { db in
            try db.execute(
                sql:
                    "INSERT INTO tidemark_members(id, retired) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET retired = excluded.retired",
                arguments: [id.description, retired ? 1 : 0])
        }
    }
}
