import Foundation
import GRDB
import Tidemark

/// Issue 12's cost of attaching: one-row write transactions through the app's own `DatabasePool`
/// with the store attached (each commit sealed at once into its own history transaction), against
/// the same writes with the store opened by path (captured by the triggers, sealed later as one).
/// Statements are prepared once, as GRDB records do.
struct AppWriterWorkload {
    var transactions: Int
    var repetitions: Int

    func run(in scratch: URL) throws -> [Report.Row] {
        var attached: [Double] = []
        var byPath: [Double] = []
        Output.progress("app writer: \(transactions) one-row transactions, store attached and by path")
        for round in 0...repetitions {
            for attach in [true, false] {
                let path = scratch.appendingPathComponent("app\(round)-\(attach).sqlite").path
                let pool = try DatabasePool(path: path)
                try pool.write { db in try db.execute(sql: Fixtures.schema) }
                let store =
                    attach
                    ? try Store.initialize(in: pool, setup: Store.Setup(replicaName: "app")).store
                    : try Store.initialize(path, setup: Store.Setup(replicaName: "app")).store
                let rows = Fixtures.Rows(count: transactions)
                let time = try timed {
                    for arguments in rows.inserts {
                        try pool.write { db in
                            try db.cachedStatement(
                                sql: "INSERT INTO items(id, title, qty, price, payload) VALUES (?, ?, ?, ?, ?)"
                            )
                            .execute(arguments: arguments)
                        }
                    }
                }
                let sealed = try store.fetchHistory().filter { $0.contextName != "adopt" }
                let expected = attach ? transactions : 1
                guard sealed.count == expected else {
                    throw BenchError.unexpectedState(
                        metric: "app_writer.one_row_tx", side: attach ? .tracked : .untracked,
                        what: "history transactions",
                        expected: Int64(expected), found: Int64(sealed.count))
                }
                if round > 0 { attach ? attached.append(time.seconds) : byPath.append(time.seconds) }
                try pool.close()
            }
        }
        return [
            Report.Row(
                metric: "app_writer.one_row_tx", ours: Measurement(samples: attached),
                baseline: Measurement(samples: byPath),
                baselineName: "store opened by path", unit: "s", goal: nil)
        ]
    }
}
