import Foundation
import GRDB
import Tidemark
import TidemarkTestSupport

/// Workloads 7 and 8 on one store of N rows written in N one-row transactions (N history
/// transactions):
/// - 8: a 10-change bundle from a new peer applied to that store, against the same bundle applied
///   to an empty replica (the cost must not grow with history);
/// - 7: after 5% of the rows are deleted, prune all history; the store's size before and after
///   `VACUUM`, against an untracked file with the same rows (the prune drops the tombstones once
///   every member has applied the deletes; `history.tombstones` counts any left).
struct HistoryWorkload {
    var transactions: Int
    var repetitions: Int
    var smallBundleChanges = 10

    /// Long by design: one measurement loop over the history operations, ours and the baseline alternating.
    func run(in scratch: URL) throws -> (rows: [Report.Row], figures: [Report.Figure]) {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        let folder = path("exchange")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let setup = { (name: String) in Store.Setup(replicaName: name, schema: ("bench", Fixtures.schema)) }
        let (large, _) = try Store.initialize(path("large.sqlite"), setup: setup("large"))
        let key = try KeyFile.load(KeyFile.defaultPath(forStore: path("large.sqlite")))
        Output.progress("history: writing \(transactions) one-row transactions")
        let writing = try timed {
            for i in 0..<transactions {
                _ = try large.write { db in
                    try db.execute(sql: ChangeMix.insertSQL, arguments: ChangeMix.insertArguments(i))
                }
            }
        }
        // The first push folds the local changes into row state: the one-off cost of local writes,
        // kept out of the timed imports below and reported on its own.
        let firstPush = try timed { try large.push(to: folder, key: key) }

        // Workload 8: one new peer per repetition (and one for the warm-up), each bundle applied to
        // the large store and to an empty replica.
        let (empty, _) = try Store.initialize(path("empty.sqlite"), setup: setup("empty"))
        let (onLarge, onEmpty) = try SmallImports(
            large: large, empty: empty,
            makePeer: { name in
                (try Store.initialize(path(name + ".sqlite"), setup: setup(name)).store, path(name + ".sqlite"))
            },
            repetitions: repetitions, changes: smallBundleChanges, metric: "history.small_import"
        ).run { db, round in
            for i in 0..<smallBundleChanges {
                try db.execute(
                    sql: ChangeMix.insertSQL,
                    arguments: ChangeMix.insertArguments(transactions + round * smallBundleChanges + i))
            }
        }

        // Workload 7: delete 5% of the rows, send everything, then prune everything.
        let deleted = transactions / 20
        for start in stride(from: 0, to: deleted, by: 1_000) {
            _ = try large.write { db in
                for i in start..<min(start + 1_000, deleted) {
                    try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [ChangeMix.key(i * 20)])
                }
            }
        }
        // The peers only sent one bundle each and never apply anything: stop trusting them, so they
        // are not members that hold history and tombstones back (pruning.md §3, §6.2).
        for round in 0...repetitions { try large.removePeer(name: "peer\(round)") }
        _ = try large.push(to: folder, key: key)
        try checkpoint(path("large.sqlite"))
        let beforePrune = try fileSize(path("large.sqlite"))
        let pruning = try timed { try large.prune(key: key) }
        try checkpoint(path("large.sqlite"))
        let afterPrune = try fileSize(path("large.sqlite"))
        let scratchFiles = try TemporaryDirectory("tidemark-bench-footprint")
        let footprint = try StoreFootprint.measure(path("large.sqlite"), scratch: scratchFiles)
        let megabyte = 1024.0 * 1024.0
        return (
            [
                Report.Row(
                    metric: "history.small_import", ours: Measurement(samples: onLarge),
                    baseline: Measurement(samples: onEmpty),
                    baselineName: "empty store", unit: "s", goal: .atMost(2.0)),
                Report.Row(
                    metric: "history.store_size_after_vacuum",
                    ours: Measurement(samples: [Double(footprint.storeBytes) / megabyte]),
                    baseline: Measurement(samples: [Double(footprint.untrackedBytes) / megabyte]),
                    baselineName: "untracked", unit: "MiB", goal: .atMost(1.1)),
            ],
            [
                .init(
                    metric: "history.write_transactions_per_s", value: Double(transactions) / writing.seconds,
                    unit: "tx/s", goal: nil),
                .init(metric: "history.first_push_seconds", value: firstPush.seconds, unit: "s", goal: nil),
                .init(
                    metric: "history.pruned_transactions", value: Double(pruning.value.removedTransactions), unit: "tx",
                    goal: nil),
                .init(metric: "history.prune_seconds", value: pruning.seconds, unit: "s", goal: nil),
                .init(
                    metric: "history.store_size_before_prune", value: Double(beforePrune) / megabyte, unit: "MiB",
                    goal: nil),
                .init(
                    metric: "history.store_size_after_prune", value: Double(afterPrune) / megabyte, unit: "MiB",
                    goal: nil),
                .init(
                    metric: "history.untracked_size", value: Double(footprint.untrackedBytes) / megabyte, unit: "MiB",
                    goal: nil),
                .init(metric: "history.tombstones", value: Double(footprint.tombstones), unit: "rows", goal: nil),
            ]
        )
    }

    /// Moves the WAL's pages into the database file, through a second connection, so the file's
    /// size is the store's.
    private func checkpoint(_ path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
    }

    private func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
    }
}
