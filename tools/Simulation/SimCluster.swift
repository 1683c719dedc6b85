import Foundation
import ReferenceModel
import Tidemark
import TidemarkTestSupport

/// The replicas, each trusting all the others, and what their exchanges cost.
final class SimCluster {
    enum Phase: Hashable { case writes, gossip }

    /// What exchanges carried.
    struct Stats {
        var bundles = 0
        var bytes = 0
        var transactions = 0
        var changes = 0
        var exportTime: TimeInterval = 0
        var importTime: TimeInterval = 0
    }

    let directory: String
    let time = SimulatedTime()
    let stores: [Store]
    let keys: [KeyFile]
    private var stats: [Phase: Stats] = [.writes: Stats(), .gossip: Stats()]

    /// What the exchanges of `phase` carried so far.
    func statistics(_ phase: Phase) -> Stats { stats[phase]! }

    /// Creates `count` replicas `r0`… in `directory`, with keys and clock skews drawn from `rng`.
    init<G: RandomNumberGenerator>(directory: String, count: Int, rng: inout G) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var stores: [Store] = []
        var keys: [KeyFile] = []
        for i in 0..<count {
            let path = directory + "/r\(i).db"
            let keyPath = KeyFile.defaultPath(forStore: path)
            try Self.writeKey(seed: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }, to: keyPath)
            let clock = SkewedClock(time: time, skew: Int64.random(in: -15...15, using: &rng))
            let store = try Store.initialize(
                path, setup: Store.Setup(replicaName: "r\(i)", schema: ("schema.sql", RandomWorkload.schema)),
                options: Store.Options(clock: clock, processID: 1000 + Int32(i))
            ).store
            stores.append(store)
            keys.append(try KeyFile.load(keyPath))
        }
        for store in stores {
            for (i, other) in stores.enumerated() where other.replica.id != store.replica.id {
                try store.addPeer(name: "r\(i)", publicKeyBase64: Data(other.publicKey).base64EncodedString())
            }
        }
        self.stores = stores
        self.keys = keys
    }

    /// An Ed25519 private key file (PKCS#8 PEM) for a 32-byte seed.
    static func writeKey(seed: [UInt8], to path: String) throws {
        let prefix: [UInt8] = [
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
        ]
        let pem =
            "-----BEGIN PRIVATE KEY-----\n\(Data(prefix + seed).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        try pem.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
    }

    /// Sends `receiver` what `sender` holds beyond the receiver's token; nothing when it holds it all.
    func exchange(from sender: Int, to receiver: Int, phase: Phase) throws {
        let want = try stores[receiver].currentToken()
        guard !want.covers(try stores[sender].currentToken()) else { return }
        let file = directory + "/bundle.tmb"
        let started = Date()
        let export = try stores[sender].exportBundle(since: want, to: file, key: keys[sender])
        let exported = Date()
        let summary = try stores[receiver].importBundle(at: file)
        stats[phase]!.exportTime += exported.timeIntervalSince(started)
        stats[phase]!.importTime += Date().timeIntervalSince(exported)
        stats[phase]!.bundles += 1
        stats[phase]!.bytes += export.bytes
        stats[phase]!.transactions += summary.appliedTransactions
        stats[phase]!.changes += summary.appliedChanges
    }

    /// Whether every replica holds the same token.
    func quiescent() throws -> Bool {
        let first = try stores[0].currentToken()
        return try stores.dropFirst().allSatisfy { try $0.currentToken() == first }
    }

    /// A replica's tracked tables as table → key → row, read through the library.
    func rows(of replica: Int) throws -> [String: [[SQLValue]: [SQLValue]]] {
        var result: [String: [[SQLValue]: [SQLValue]]] = [:]
        for table in RandomWorkload.tables {
            let columns = table.columns.map { "\"\($0)\"" }.joined(separator: ", ")
            let (sets, _) = try stores[replica].execute(sql: "SELECT \(columns) FROM \"\(table.name)\"")
            let keyIndexes = table.keyColumns.map { table.columns.firstIndex(of: $0)! }
            result[table.name] = Dictionary(
                uniqueKeysWithValues: sets[0].rows.map { row in (keyIndexes.map { row[$0] }, row) })
        }
        return result
    }
}
