import Foundation
import GRDB
import Tidemark

/// Issue 11's schema-change cost: adding a column to a tracked table of N rows through
/// `Store.migrate`, then reading the store's row digest as `sync status` and the next watermark do,
/// against the same `ALTER TABLE … ADD COLUMN` on an untracked table of the same rows. Neither may
/// rewrite the rows, so both should stay flat in N; the digest read is timed because a migration
/// that makes the store count a table's rows again pays for it there, not inside `migrate`. A
/// column with a default and a nullable one are timed apart: the row hash leaves out a NULL and a
/// cell holding its column's literal default alike (Protocol/exchange.md §8.1), so neither should
/// cost a count, and a default that did would show here. An untracked copy of the table inside the
/// tracked store gets the same ALTER through `Store.execute`, as a reference that tells what
/// tracking adds from what the store's file costs any ALTER (a larger schema for SQLite to parse
/// again after it, and a WAL commit where the untracked database syncs a rollback journal).
struct SchemaWorkload {
    var rows: Int
    var repetitions: Int

    func run(in scratch: URL) throws -> [Report.Row] {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        let fill = """
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows - 1))
            INSERT INTO items(id, title, qty, price, payload) SELECT printf('k%08d', i), 'Item ' || i, i, i * 0.25, zeroblob(32) FROM n
            """
        Output.progress("schema: \(rows) rows, tracked and untracked")
        let (store, _) = try Store.initialize(
            path("tracked.sqlite"), setup: Store.Setup(replicaName: "schema", schema: ("bench", Fixtures.schema)))
        _ = try store.execute(sql: fill)
        // The same rows in an untracked table of the same store, for the `.vs_store` reference.
        _ = try store.execute(
            sql: Fixtures.schema.replacingOccurrences(of: "CREATE TABLE items(", with: "CREATE TABLE untracked_items(")
                + "; INSERT INTO untracked_items SELECT * FROM items; CREATE INDEX untracked_by_qty ON untracked_items(qty)"
        )
        // Folds the inserts into row metadata outside the timed region, as any export would.
        try store.migrate(Store.Migration(sql: "CREATE INDEX items_by_qty ON items(qty)"))
        let plain = try DatabaseQueue(path: path("untracked.sqlite"))
        try plain.write { db in
            try db.execute(sql: Fixtures.schema)
            try db.execute(sql: fill)
            try db.execute(sql: "CREATE INDEX items_by_qty ON items(qty)")
        }
        // The first pull's watermark counts the rows once and keeps their digest; each later one
        // counts again what a migration made the store forget. Both happen outside the timed region.
        let key = try KeyFile.load(KeyFile.defaultPath(forStore: path("tracked.sqlite")))
        let folder = path("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        _ = try store.pull(from: folder, key: key, prune: false)
        // Each metric, the name of the columns it adds, and their definition.
        let kinds = [
            (metric: "schema.add_column", column: "extra", definition: "TEXT DEFAULT 'none'"),
            (metric: "schema.add_column.nullable", column: "spare", definition: "TEXT"),
        ]
        var samples: [String: (ours: [Double], baseline: [Double], inStore: [Double])] = [:]
        for round in 0...repetitions {
            for (metric, prefix, definition) in kinds {
                let column = "\(prefix)\(round)"
                let alter = "ALTER TABLE items ADD COLUMN \(column) \(definition)"
                let tracked = try timed {
                    let summary = try store.migrate(Store.Migration(sql: alter))
                    _ = try store.rowDigest()
                    return summary
                }
                guard tracked.value.addedColumns == ["items": [column]] else {
                    throw BenchError.unexpectedState(
                        metric: metric, side: .tracked, what: "added columns", expected: 1,
                        found: Int64(tracked.value.addedColumns["items"]?.count ?? 0))
                }
                let inStore = try timed {
                    try store.execute(sql: alter.replacingOccurrences(of: "TABLE items", with: "TABLE untracked_items"))
                }
                _ = try store.pull(from: folder, key: key, prune: false)
                let untracked = try timed { try plain.write { db in try db.execute(sql: alter) } }
                if round > 0 {
                    samples[metric, default: ([], [], [])].ours.append(tracked.seconds)
                    samples[metric, default: ([], [], [])].baseline.append(untracked.seconds)
                    samples[metric, default: ([], [], [])].inStore.append(inStore.seconds)
                }
            }
        }
        // Each goal row, then two references: the same migration against the ALTER of the
        // untracked table in the store (what tracking adds), and that ALTER against the untracked
        // database's (what the store's file costs any ALTER, tracked or not).
        return kinds.map(\.metric).flatMap { metric in
            let (ours, baseline, inStore) = samples[metric]!
            return [
                Report.Row(
                    metric: metric, ours: Measurement(samples: ours), baseline: Measurement(samples: baseline),
                    baselineName: "ALTER TABLE, untracked", unit: "s", goal: .atMost(1.5)),
                Report.Row(
                    metric: metric + ".vs_store", ours: Measurement(samples: ours),
                    baseline: Measurement(samples: inStore), baselineName: "ALTER, untracked table in store", unit: "s",
                    goal: nil),
                Report.Row(
                    metric: metric + ".store_floor", ours: Measurement(samples: inStore),
                    baseline: Measurement(samples: baseline), baselineName: "ALTER TABLE, untracked", unit: "s",
                    goal: nil),
            ]
        }
    }
}
