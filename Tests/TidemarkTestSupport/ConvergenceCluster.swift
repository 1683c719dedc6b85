import Foundation
import Tidemark

/// Simulated wall-clock time shared by a cluster's replicas: it moves only when the test says, so a
/// seed replays the same timestamps, and replicas often stamp the same millisecond.
public final class SimulatedTime: @unchecked Sendable {  // @unchecked: `now` is only touched under `lock`.
    private let lock = NSLock()
    private var now: Int64

    /// Starts at `milliseconds`.
    public init(milliseconds: Int64 = 1_800_000_000_000) { now = milliseconds }

    /// The current reading.
    public var milliseconds: Int64 { lock.withLock { now } }

    /// Moves time forward.
    public func advance(by milliseconds: Int64) { lock.withLock { now += milliseconds } }
}

/// One replica's view of simulated time: off by a fixed skew.
public struct SkewedClock: WallClock {
    public let time: SimulatedTime
    public let skew: Int64
    public init(time: SimulatedTime, skew: Int64) {
        self.time = time
        self.skew = skew
    }
    public func nowMilliseconds() -> Int64 { time.milliseconds + skew }
}

/// Replicas of one schema in a temporary directory, each trusting all the others, with keys made
/// from given seeds (so replica ids, and with them every clock tie-break, replay) and clocks on
/// shared simulated time. Also keeps every bundle it exchanged, for replays.
public final class ConvergenceCluster {
    /// Why an exchange did not apply.
    public enum Refusal: Error, Equatable {
        /// The receiver lacks what the bundle builds on (allowed for replays).
        case missingPrerequisites(String)
    }

    public let directory: TemporaryDirectory
    public let time: SimulatedTime
    public let replicas: [TestReplica]
    /// The shared exchange folder for `push`/`pull`.
    public let folder: String
    /// A bundle file written by `exchange`.
    public struct BundleRecord: Sendable {
        public var file: String
        public var sender: Int
        public var receiver: Int
        public var name: String { (file as NSString).lastPathComponent }
    }

    /// Every bundle `exchange` wrote, oldest first.
    public private(set) var bundles: [BundleRecord] = []
    /// Bundles exported and their bytes.
    public private(set) var exported = (count: 0, bytes: 0)

    /// Creates `keySeeds.count` replicas named `r0`, `r1`, …; replica `i` signs with the Ed25519 key
    /// whose 32-byte seed is `keySeeds[i]` and reads the shared time shifted by `skews[i]` ms.
    public init(schema: String, keySeeds: [[UInt8]], skews: [Int64], label: String = "tidemark-convergence") throws {
        precondition(keySeeds.count == skews.count && keySeeds.allSatisfy { $0.count == 32 })
        directory = try TemporaryDirectory(label)
        time = SimulatedTime()
        folder = directory.file("exchange")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var replicas: [TestReplica] = []
        for (i, seed) in keySeeds.enumerated() {
            let name = "r\(i)"
            try Self.writeKey(seed: seed, to: KeyFile.defaultPath(forStore: directory.file("\(name).db")))
            let options = Store.Options(clock: SkewedClock(time: time, skew: skews[i]), processID: 1000 + Int32(i))
            replicas.append(try TestReplica(name, in: directory, schema: schema, preserve: [], options: options))
        }
        try TestReplica.trustEachOther(replicas)
        self.replicas = replicas
    }

    /// Writes an Ed25519 private key file (PKCS#8 PEM, as `KeyFile` reads) for a 32-byte seed.
    static func writeKey(seed: [UInt8], to path: String) throws {
        let prefix: [UInt8] = [
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
        ]
        let pem =
            "-----BEGIN PRIVATE KEY-----\n\(Data(prefix + seed).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        try pem.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
    }

    public var count: Int { replicas.count }

    // MARK: - Exchanging

    /// Exports from `sender` what `since` does not cover into a new bundle file, then imports it into
    /// `receiver`. Returns the file, for replays.
    @discardableResult
    public func exchange(from sender: Int, to receiver: Int, since: History.Token) throws -> (
        file: String, imported: Store.ImportSummary
    ) {
        let file = directory.file("bundle-\(bundles.count + 1)-r\(sender)-to-r\(receiver).tmb")
        let summary = try replicas[sender].export(since: since, to: file)
        bundles.append(BundleRecord(file: file, sender: sender, receiver: receiver))
        exported.count += 1
        exported.bytes += summary.bytes
        return (file, try replicas[receiver].store.importBundle(at: file))
    }

    /// Sends `receiver` everything it lacks from `sender` (`exchange` since the receiver's token).
    public func send(_ sender: Int, to receiver: Int) throws {
        try exchange(from: sender, to: receiver, since: try replicas[receiver].store.currentToken())
    }

    /// Runs `sql` on `replica` through the store, as one transaction.
    public func write(_ replica: Int, _ sql: String) throws {
        _ = try replicas[replica].store.execute(sql: sql)
    }

    /// Imports a bundle file into `receiver`; a refusal for missing prerequisites is returned, every
    /// other error thrown.
    public func replay(_ file: String, into receiver: Int) throws -> Result<Store.ImportSummary, Refusal> {
        do {
            return .success(try replicas[receiver].store.importBundle(at: file))
        } catch ExchangeError.missingPrerequisites(_, let missing) {
            return .failure(.missingPrerequisites(missing))
        }
    }

    /// Pushes `replica`'s new transactions into the shared folder.
    public func push(_ replica: Int) throws {
        let summary = try replicas[replica].store.push(to: folder, key: replicas[replica].key)
        if let export = summary.export {
            exported.count += 1
            exported.bytes += export.bytes
        }
    }

    /// Pulls everything `replica` lacks from the shared folder; returns the pull's warnings. Never
    /// prunes: convergence is checked against the whole history, and old tokens stay usable.
    public func pull(_ replica: Int) throws -> [String] {
        try replicas[replica].store.pull(from: folder, key: replicas[replica].key, prune: false).warnings
    }

    /// Every replica's current token.
    public func tokens() throws -> [History.Token] { try replicas.map { try $0.store.currentToken() } }

    /// Gossips over `edges` (ordered pairs), each sender exporting since the receiver's current
    /// token, round after round until every replica holds the same token after a full round.
    /// Returns the number of rounds; throws if `limit` rounds do not settle it.
    public func quiesce(edges: [(Int, Int)], limit: Int = 40) throws -> Int {
        for round in 1...limit {
            for (sender, receiver) in edges {
                try exchange(from: sender, to: receiver, since: try replicas[receiver].store.currentToken())
            }
            let tokens = try tokens()
            if tokens.allSatisfy({ $0 == tokens[0] }) { return round }
        }
        throw QuiescenceError(rounds: limit, tokens: try tokens().map(\.description))
    }

    /// Gossip did not settle.
    public struct QuiescenceError: Error, CustomStringConvertible {
        public var rounds: Int
        public var tokens: [String]
        public var description: String {
            "no quiescence after \(rounds) rounds; tokens:\n" + tokens.joined(separator: "\n")
        }
    }
}
