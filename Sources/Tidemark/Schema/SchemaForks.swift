import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A trusted peer that made a different migration from a version both replicas had
    /// (Protocol/schema.md §5): none of its bundles can be applied here, and none of this
    /// replica's there, until one of the two starts again as a new store on the other's branch.
    public struct SchemaFork: Sendable, Hashable {
        /// The peer whose files showed the fork.
        public var peer: Replica.ID
        /// The version this store made at the position where the two lineages part.
        public var ours: Schema.Version
        /// The version the peer made there.
        public var theirs: Schema.Version
        /// When a pull last found it.
        public var seenAt: HLCTimestamp
    }

    /// The forks pulls found with trusted peers, by peer name; a fork is forgotten once a file of
    /// that peer applies, and is not listed for a peer no longer trusted.
    public func schemaForks() throws -> [SchemaFork] {
        try mappingErrors { try database.read { db in try SchemaForks.all(db) } }
    }
}

/// What pulls learned of schema forks (`Store.SchemaFork`), kept in `tidemark_meta` under
/// `Bookkeeping.Meta.schemaForkPrefix` and the peer's id: `import` refuses a forked bundle and
/// changes nothing, so only a pull, which writes its watermark anyway, remembers it for `status`.
enum SchemaForks {
    /// Records that `peer`'s file was written under `theirs`, which forks from the store's lineage.
    static func note(_ db: Database, peer: Replica.ID, theirs: Schema.Version, at time: HLCTimestamp) throws {
        let value =
            "\(theirs.position) \(theirs.hexID) \(Data(theirs.change.encoded()).base64EncodedString()) \(time.packed)"
        try Bookkeeping.setMeta(db, Bookkeeping.Meta.schemaForkPrefix + peer.description, value)
    }

    /// After a pull: records the forks its files showed, by the peer folder each was in, and
    /// forgets those with peers one of whose files applied or held nothing new.
    static func update(_ db: Database, failures: PullFailures, sources: PullSources, at time: HLCTimestamp) throws {
        var found: [Replica.ID: Schema.Version] = [:]
        for (address, theirs) in failures.forks {
            if let folder = sources.listed[address]?.file.replica { found[folder] = theirs }
        }
        for (peer, theirs) in found { try note(db, peer: peer, theirs: theirs, at: time) }
        let used = Set(failures.used.compactMap { sources.listed[$0]?.file.replica })
        for peer in used where found[peer] == nil { try clear(db, peer: peer) }
    }

    /// Forgets the fork with `peer`, if one was recorded: one of its files applied.
    static func clear(_ db: Database, peer: Replica.ID) throws {
        try db.execute(
            sql: "DELETE FROM tidemark_meta WHERE key = ?",
            arguments: [Bookkeeping.Meta.schemaForkPrefix + peer.description])
    }

    /// Every recorded fork with a peer the store still trusts, ordered by the peer's name. A record
    /// that cannot be read (written by another build) is left out.
    static func all(_ db: Database) throws -> [Store.SchemaFork] {
        let lineage = try SchemaLineage.fetch(db)
        let peers = try Store.peers(db)
        var forks: [(String, Store.SchemaFork)] = []
        for row in try Row.fetchAll(
            db, sql: "SELECT substr(key, ?), value FROM tidemark_meta WHERE key LIKE ? ESCAPE '\\'",
            arguments: [Bookkeeping.Meta.schemaForkPrefix.count + 1, escapedPrefix + "%"])
        {
            guard let peer = peers.first(where: { $0.id.description == row[0] as String }),
                let fork = decode(row[1] as String, peer: peer.id, lineage: lineage)
            else { continue }
            forks.append((peer.name, fork))
        }
        return forks.sorted { $0.0 < $1.0 }.map(\.1)
    }

    private static var escapedPrefix: String {
        Bookkeeping.Meta.schemaForkPrefix.replacingOccurrences(of: "_", with: "\\_")
    }

    private static func decode(_ value: String, peer: Replica.ID, lineage: [Schema.Version]) -> Store.SchemaFork? {
        let fields = value.split(separator: " ").map(String.init)
        guard fields.count == 4, let position = Int(fields[0]), position >= 1, position <= lineage.count,
            let id = HexCoding.decode(fields[1]), let bytes = Data(base64Encoded: fields[2]),
            let change = try? Schema.Change(encoded: [UInt8](bytes)), let packed = Int64(fields[3])
        else { return nil }
        return Store.SchemaFork(
            peer: peer, ours: lineage[position - 1], theirs: Schema.Version(position: position, id: id, change: change),
            seenAt: HLCTimestamp(packed: packed))
    }
}
