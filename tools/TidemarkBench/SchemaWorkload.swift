import Foundation
import GRDB
import Tidemark

/// Issue 11's schema-change cost: adding a column to a tracked table of N rows through
/// `Store.migrate`, against the same `ALTER TABLE … ADD COLUMN` on an untracked table of the same
/// rows. Neither may rewrite the rows, so both should stay flat in N.
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
        // Folds the inserts into row metadata outside the timed region, as any export would.
        try store.migrate(Store.Migration(sql: "CREATE INDEX items_by_qty ON items(qty)"))
        let plain = try DatabaseQueue(path: path("untracked.sqlite"))
        try plain.write { db in
            try db.execute(sql: Fixtures.schema)
            try db.execute(sql: fill)
            try db.execute(sql: "CREATE INDEX items_by_qty ON items(qty)")
        }
        var ours: [Double] = []
        var baseline: [Double] = []
        for round in 0...repetitions {
            let alter = "ALTER TABLE items ADD COLUMN extra\(round) TEXT DEFAULT 'none'"
            let tracked = try timed { try store.migrate(Store.Migration(sql: alter)) }
            guard tracked.value.addedColumns == ["items": ["extra\(round)"]] else {
                throw BenchError.unexpectedState(
                    metric: "schema.add_column", side: .tracked, what: "added columns", expected: 1,
                    found: Int64(tracked.value.addedColumns["items"]?.count ?? 0))
            }
            let untracked = try timed { try plain.write { db in try db.execute(sql: alter) } }
            if round > 0 {
                ours.append(tracked.seconds)
                baseline.append(untracked.seconds)
            }
        }
        return [
            Report.Row(
                metric: "schema.add_column", ours: Measurement(samples: ours), baseline: Measurement(samples: baseline),
                baselineName: "ALTER TABLE, untracked", unit: "s", goal: .atMost(1.5))
        ]
    }
}
