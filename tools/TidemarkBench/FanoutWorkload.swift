import Foundation
import GRDB
import Tidemark

/// Issue 13's fan-out: for each group size N, N replicas each insert --fanout-rows rows in one
/// transaction, then all push and pull through one folder in rounds until a round moves nothing.
/// Reports the bytes of bundles written per byte of unique data (each replica's own transactions
/// in one bundle), the bytes of bundles each replica applied per byte it lacked, and the time per
/// replica of a round that carries data and of the quiet round after it.
struct FanoutWorkload {
    var sizes: [Int]
    var rowsPerReplica: Int

    func run(in scratch: URL) throws -> [Report.Figure] {
        var figures: [Report.Figure] = []
        var busySeconds: [Int: Double] = [:]
        for size in sizes {
            let directory = scratch.appendingPathComponent("fanout-\(size)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let result = try exchange(replicas: size, in: directory)
            busySeconds[size] = result.busy
            let prefix = "fanout.\(size)"
            figures += [
                .init(
                    metric: prefix + ".written_per_unique_byte", value: result.written, unit: "bytes/byte",
                    goal: .atMost(1.1)),
                .init(
                    metric: prefix + ".applied_per_lacking_byte", value: result.read, unit: "bytes/byte",
                    goal: .atMost(1.1)),
                .init(metric: prefix + ".seconds_per_replica.data_round", value: result.busy, unit: "s", goal: nil),
                .init(metric: prefix + ".seconds_per_replica.quiet_round", value: result.quiet, unit: "s", goal: nil),
                // Each replica applies the rows of N - 1 others: the time per row it applied.
                .init(
                    metric: prefix + ".microseconds_per_row_applied",
                    value: result.busy * 1e6 / Double((size - 1) * rowsPerReplica), unit: "µs", goal: nil),
            ]
        }
        if let smallest = sizes.min(), let largest = sizes.max(), smallest < largest,
            let low = busySeconds[smallest], let high = busySeconds[largest]
        {
            figures.append(
                .init(
                    metric: "fanout.seconds_per_replica.\(largest)_over_\(smallest)", value: high / low, unit: "×",
                    goal: .atMost(1.3)))
        }
        return figures
    }

    /// What one group size came to.
    struct Result {
        var written: Double
        var read: Double
        var busy: Double
        var quiet: Double
    }

    /// Long by design: one measured exchange round, step by step, with what each step counts.
    private func exchange(replicas: Int, in directory: URL) throws -> Result {
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        Output.progress("fanout: \(replicas) replicas write \(rowsPerReplica) rows each")
        let folder = path("exchange")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let names = (0..<replicas).map { String(format: "r%02d", $0) }
        let stores = try names.map { name in
            try Store.initialize(
                path(name + ".sqlite"), setup: Store.Setup(replicaName: name, schema: ("bench", Fixtures.schema))
            )
            .store
        }
        let keys = try names.map { try KeyFile.load(KeyFile.defaultPath(forStore: path($0 + ".sqlite"))) }
        for store in stores {
            for (name, other) in zip(names, stores) where other !== store {
                try store.addPeer(name: name, publicKeyBase64: Data(other.publicKey).base64EncodedString())
            }
        }
        var own: [Int] = []
        for (index, store) in stores.enumerated() {
            _ = try store.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(rowsPerReplica - 1))
                    INSERT INTO items(id, title, qty, price, payload)
                    SELECT printf('\(names[index])-%06d', i), 'Item ' || i, i, i * 0.25, randomblob(32) FROM n
                    """)
            // The unique data: the replica's own transactions in one bundle.
            own.append(try store.exportBundle(since: .zero, to: path("own.tmb"), key: keys[index]).bytes)
        }
        let unique = own.reduce(0, +)

        var written = 0
        var applied = Array(repeating: 0, count: replicas)
        var roundSeconds: [Double] = []
        for round in 1...6 {
            Output.progress("fanout: \(replicas) replicas, round \(round)")
            var moved = false
            let started = ContinuousClock.now
            for (store, key) in zip(stores, keys) {
                if let bytes = try store.push(to: folder, key: key).export?.bytes, bytes > 0 {
                    written += bytes
                    moved = true
                }
            }
            for (index, (store, key)) in zip(stores, keys).enumerated() {
                let pulled = try store.pull(from: folder, key: key, prune: false)
                guard pulled.warnings.isEmpty else { throw BenchError.folderWarnings(pulled.warnings) }
                for summary in pulled.imported {
                    applied[index] +=
                        (try FileManager.default.attributesOfItem(atPath: summary.path)[.size] as? Int) ?? 0
                    moved = true
                }
            }
            roundSeconds.append((ContinuousClock.now - started).seconds / Double(replicas))
            if !moved { break }
        }
        for store in stores {
            let count = try store.write { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM items") }.0 ?? 0
            guard count == Int64(replicas * rowsPerReplica) else {
                throw BenchError.unexpectedState(
                    metric: "fanout", side: .tracked, what: "rows after the exchange",
                    expected: Int64(replicas * rowsPerReplica), found: count)
            }
        }
        guard roundSeconds.count >= 2 else {
            throw BenchError.unexpectedState(
                metric: "fanout", side: .tracked, what: "rounds until quiet", expected: 2,
                found: Int64(roundSeconds.count))
        }
        let lacking = own.map { unique - $0 }
        let read = zip(applied, lacking).map { Double($0) / Double($1) }.max() ?? 0
        let data = roundSeconds.dropLast()
        Output.progress("fanout: \(replicas) replicas quiet after \(roundSeconds.count) rounds")
        return Result(
            written: Double(written) / Double(unique), read: read, busy: data.reduce(0, +) / Double(data.count),
            quiet: roundSeconds.last!)
    }
}
