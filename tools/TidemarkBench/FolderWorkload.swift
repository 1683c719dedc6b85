import Foundation
import GRDB
import Tidemark
import TidemarkTestSupport

/// Workload 6: replicas that each wrote their share of random operations sync through one folder
/// (push, then pull, in rounds) until a round imports nothing. The baseline replays the very
/// bundles each replica imported with `importBundle` alone, on copies of the replicas as they were
/// before the exchange: what syncing costs beyond applying the changes.
struct FolderWorkload {
    var replicas: Int
    var operationsPerReplica: Int
    var seed: UInt64
    /// Operations per write transaction.
    var batch = 100

    /// Long by design: one measurement loop over the replicas' rounds, read top to bottom.
    func run(in scratch: URL) throws -> (rows: [Report.Row], figures: [Report.Figure]) {
        let folder = scratch.appendingPathComponent("exchange").path
        let saved = scratch.appendingPathComponent("bundles").path
        let before = scratch.appendingPathComponent("before").path
        for path in [folder, saved, before] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        let paths = (0..<replicas).map { scratch.appendingPathComponent("replica\($0).sqlite").path }
        Output.progress("folder: \(replicas) replicas write \(operationsPerReplica) operations each (seed \(seed))")
        try writeReplicas(paths)
        for path in paths {
            try PlainDatabase.copy(path, to: before + "/" + URL(fileURLWithPath: path).lastPathComponent)
        }

        // The exchange, timed call by call; the copies of each new bundle are made outside the clock.
        let stores = try paths.map { try Store.open($0) }
        let keys = try paths.map { try KeyFile.load(KeyFile.defaultPath(forStore: $0)) }
        var pushSeconds = 0.0
        var pullSeconds = 0.0
        var rounds = 0
        var bundles = 0
        var applied: [[String]] = Array(repeating: [], count: replicas)
        while true {
            rounds += 1
            Output.progress("folder: round \(rounds)")
            for (store, key) in zip(stores, keys) {
                let push = try timed { try store.push(to: folder, key: key) }
                pushSeconds += push.seconds
                if let path = push.value.path {
                    try FileManager.default.copyItem(atPath: path, toPath: saved + "/" + Self.savedName(path))
                    bundles += 1
                }
            }
            var importedAny = false
            for (index, (store, key)) in zip(stores, keys).enumerated() {
                let pull = try timed { try store.pull(from: folder, key: key) }
                pullSeconds += pull.seconds
                guard pull.value.warnings.isEmpty else { throw BenchError.folderWarnings(pull.value.warnings) }
                for summary in pull.value.imported {
                    guard summary.header.kind == .changes else {
                        throw BenchError.folderWarnings(["snapshot \(summary.path) imported"])
                    }
                    applied[index].append(saved + "/" + Self.savedName(summary.path))
                    importedAny = true
                }
            }
            if !importedAny { break }
        }
        let fingerprints = try stores.map { store in try store.write { db in try ChangeMix.fingerprint(db) }.0 }
        guard Set(fingerprints).count == 1 else {
            throw BenchError.baselineMismatch(
                what: "replicas after quiescence", ours: fingerprints[0], baseline: fingerprints.last!)
        }

        Output.progress("folder: replaying \(applied.map(\.count).reduce(0, +)) imports on the copies")
        var rawSeconds = 0.0
        for (index, path) in paths.enumerated() {
            let copy = before + "/" + URL(fileURLWithPath: path).lastPathComponent
            let store = try Store.open(copy)
            for bundle in applied[index] { rawSeconds += try timed { try store.importBundle(at: bundle) }.seconds }
            guard try store.write({ db in try ChangeMix.fingerprint(db) }).0 == fingerprints[0] else {
                throw BenchError.baselineMismatch(
                    what: "replayed replica \(index)", ours: fingerprints[0], baseline: [])
            }
        }
        let raw = Measurement(samples: [rawSeconds])
        return (
            [
                Report.Row(
                    metric: "folder.quiescence", ours: Measurement(samples: [pushSeconds + pullSeconds]), baseline: raw,
                    baselineName: "raw import", unit: "s", goal: .atMost(1.5)),
                Report.Row(
                    metric: "folder.pull", ours: Measurement(samples: [pullSeconds]), baseline: raw,
                    baselineName: "raw import", unit: "s",
                    goal: .atMost(1.5)),
            ],
            [
                .init(metric: "folder.rounds", value: Double(rounds), unit: "rounds", goal: nil),
                .init(metric: "folder.bundles", value: Double(bundles), unit: "bundles", goal: nil),
                .init(metric: "folder.push_seconds", value: pushSeconds, unit: "s", goal: nil),
            ]
        )
    }

    /// `DIR/<replica id>/000001.tmb` → `<replica id>-000001.tmb`.
    static func savedName(_ path: String) -> String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().lastPathComponent + "-" + url.lastPathComponent
    }

    /// Creates the replicas, makes each trust every other, and runs each one's random operations:
    /// upserts, updates and deletes over a key space they share.
    private func writeReplicas(_ paths: [String]) throws {
        var generator = SeededGenerator(seed: seed)
        let stores = try paths.enumerated().map { index, path in
            try Store.initialize(
                path, setup: Store.Setup(replicaName: "replica\(index)", schema: ("bench", Fixtures.schema))
            ).store
        }
        for store in stores {
            for (index, other) in stores.enumerated() where other !== store {
                try store.addPeer(name: "replica\(index)", publicKeyBase64: Data(other.publicKey).base64EncodedString())
            }
        }
        let keySpace = max(1, replicas * operationsPerReplica / 4)
        for (index, store) in stores.enumerated() {
            for start in stride(from: 0, to: operationsPerReplica, by: batch) {
                let count = min(batch, operationsPerReplica - start)
                let draws = (0..<count).map { _ in
                    (generator.next() % 10, Int(generator.next() % UInt64(keySpace)), generator.next())
                }
                _ = try store.write { db in
                    for (kind, key, value) in draws {
                        let id = ChangeMix.key(key)
                        switch kind {
                        case 0..<6:
                            var arguments = ChangeMix.insertArguments(key)
                            arguments += [Int(value % 1_000_000), "r\(index)"]
                            try db.execute(
                                sql: ChangeMix.insertSQL + " ON CONFLICT(id) DO UPDATE SET qty = ?, title = ?",
                                arguments: arguments)
                        case 6..<8:
                            try db.execute(
                                sql: "UPDATE items SET price = ? WHERE id = ?", arguments: [Double(value % 1000), id])
                        default:
                            try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [id])
                        }
                    }
                }
            }
        }
    }
}
