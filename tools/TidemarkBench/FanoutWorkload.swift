import Foundation
import GRDB
import Tidemark

/// Issue 13's fan-out: for each group size N, N replicas each insert --fanout-rows rows in one
/// transaction, then all push and pull through one folder in rounds until a round moves nothing.
/// Reports the bytes of bundles written per byte of unique data (each replica's own transactions
/// in one bundle), the bytes of bundles each replica applied per byte it lacked, and the time per
/// replica of a round that carries data and of the quiet round after it. A second group of each
/// size exchanges with pruning, as `pull` does by default: there snapshots count as written too.
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
            let pruned = try prunedExchange(replicas: size, in: directory.appendingPathComponent("pruned"))
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
                .init(
                    metric: prefix + ".pruned.written_per_unique_byte", value: pruned.written, unit: "bytes/byte",
                    goal: .atMost(1.1)),
                .init(
                    metric: prefix + ".pruned.snapshots_written_per_unique_byte", value: pruned.snapshots,
                    unit: "bytes/byte", goal: nil),
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

    /// Bundles and snapshots written per byte of unique data, and snapshots alone, with pruning
    /// as `pull` does by default: each replica writes its rows in three transactions, and after
    /// each all push and pull until a round moves nothing. Every prune that removes bundles may
    /// write a snapshot of the whole state.
    private func prunedExchange(replicas: Int, in directory: URL) throws -> (written: Double, snapshots: Double) {
        Output.progress("fanout: \(replicas) replicas write \(rowsPerReplica) rows each in three waves, pruning")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let group = try Group(replicas: replicas, in: directory)
        let size = { (address: String) in
            (try? FileManager.default.attributesOfItem(atPath: address)[.size] as? Int) ?? 0
        }
        var unique = 0
        var bundles = 0
        var snapshots = 0
        let waves = min(3, rowsPerReplica)
        var written = 0
        for wave in 0..<waves {
            let rows = rowsPerReplica / waves + (wave < rowsPerReplica % waves ? 1 : 0)
            for index in group.stores.indices { unique += try group.insert(rows, from: written, by: index) }
            written += rows
            for round in 1...8 {
                Output.progress("fanout: \(replicas) replicas, wave \(wave + 1), round \(round), pruning")
                var moved = false
                for (store, key) in zip(group.stores, group.keys) {
                    let pushed = try store.push(to: group.folder, key: key)
                    if let bytes = pushed.export?.bytes, bytes > 0 {
                        bundles += bytes
                        moved = true
                    }
                    if let snapshot = pushed.snapshot { snapshots += size(snapshot) }
                }
                for (store, key) in zip(group.stores, group.keys) {
                    let pulled = try store.pull(from: group.folder, key: key)
                    guard pulled.warnings.isEmpty else { throw BenchError.folderWarnings(pulled.warnings) }
                    if !pulled.imported.isEmpty { moved = true }
                    for snapshot in pulled.prune?.snapshots ?? [] { snapshots += size(snapshot) }
                }
                if !moved { break }
            }
        }
        try group.check(rows: replicas * rowsPerReplica)
        return (Double(bundles + snapshots) / Double(unique), Double(snapshots) / Double(unique))
    }

    /// N replicas that trust each other, with an empty exchange folder.
    private struct Group {
        var names: [String]
        var stores: [Store]
        var keys: [KeyFile]
        var folder: String
        var directory: URL

        init(replicas: Int, in directory: URL) throws {
            self.directory = directory
            folder = directory.appendingPathComponent("exchange").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let names = (0..<replicas).map { String(format: "r%02d", $0) }
            let path = { (name: String) in directory.appendingPathComponent(name).path }
            let stores = try names.map { name in
                try Store.initialize(
                    path(name + ".sqlite"), setup: Store.Setup(replicaName: name, schema: ("bench", Fixtures.schema))
                )
                .store
            }
            keys = try names.map { try KeyFile.load(KeyFile.defaultPath(forStore: path($0 + ".sqlite"))) }
            for store in stores {
                for (name, other) in zip(names, stores) where other !== store {
                    try store.addPeer(name: name, publicKeyBase64: Data(other.publicKey).base64EncodedString())
                }
            }
            self.names = names
            self.stores = stores
        }

        /// Replica `index` inserts `rows` rows from `first` on in one transaction; returns the bytes
        /// of a bundle of just them, what that write adds to the unique data.
        func insert(_ rows: Int, from first: Int = 0, by index: Int) throws -> Int {
            let store = stores[index]
            let before = try store.currentToken()
            _ = try store.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT \(first) UNION ALL SELECT i + 1 FROM n WHERE i < \(first + rows - 1))
                    INSERT INTO items(id, title, qty, price, payload)
                    SELECT printf('\(names[index])-%06d', i), 'Item ' || i, i, i * 0.25, randomblob(32) FROM n
                    """)
            let own = directory.appendingPathComponent("own.tmb").path
            return try store.exportBundle(since: before, to: own, key: keys[index]).bytes
        }

        /// Fails unless every replica holds `rows` rows.
        func check(rows: Int) throws {
            for store in stores {
                let count = try store.write { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM items") }.0 ?? 0
                guard count == Int64(rows) else {
                    throw BenchError.unexpectedState(
                        metric: "fanout", side: .tracked, what: "rows after the exchange", expected: Int64(rows),
                        found: count)
                }
            }
        }
    }

    /// Long by design: one measured exchange round, step by step, with what each step counts.
    private func exchange(replicas: Int, in directory: URL) throws -> Result {
        Output.progress("fanout: \(replicas) replicas write \(rowsPerReplica) rows each")
        let group = try Group(replicas: replicas, in: directory)
        let (stores, keys, folder) = (group.stores, group.keys, group.folder)
        // The unique data: each replica's own transactions in one bundle.
        let own = try stores.indices.map { try group.insert(rowsPerReplica, by: $0) }
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
        try group.check(rows: replicas * rowsPerReplica)
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
