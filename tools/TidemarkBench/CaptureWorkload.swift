import GRDB

/// Capture overhead: insert N rows, update one non-key column of each, delete them, in transactions
/// of `batch` rows (`batch == N` is a single transaction).
enum CaptureWorkload {
    /// Tracked writes should take at most 1.3× the time of untracked ones.
    static let goal = 1.3

    static func make(rows: Fixtures.Rows, batch: Int, label: String) -> Workload {
        let n = Int64(rows.count)
        return Workload(
            name: "capture.\(label)",
            phases: [
                phase(
                    "capture.insert.\(label)",
                    sql: "INSERT INTO items(id, title, qty, price, payload) VALUES (?, ?, ?, ?, ?)",
                    arguments: rows.inserts, batch: batch, check: .init(sql: "SELECT count(*) FROM items", expected: n)),
                phase(
                    "capture.update.\(label)", sql: "UPDATE items SET qty = ? WHERE id = ?",
                    arguments: rows.updates, batch: batch,
                    check: .init(sql: "SELECT count(*) FROM items WHERE qty >= \(n)", expected: n)),
                phase(
                    "capture.delete.\(label)", sql: "DELETE FROM items WHERE id = ?",
                    arguments: rows.deletes, batch: batch, check: .init(sql: "SELECT count(*) FROM items", expected: 0)),
            ])
    }

    /// Executes `sql` once per argument list, `batch` executions per transaction, reusing the
    /// connection's prepared statement.
    static func phase(
        _ metric: String, sql: String, arguments: [StatementArguments], batch: Int, check: Workload.Check
    ) -> Workload.Phase {
        Workload.Phase(metric: metric, goal: goal, check: check, capturedChanges: Int64(arguments.count)) { target in
            for start in stride(from: 0, to: arguments.count, by: batch) {
                let slice = arguments[start..<min(start + batch, arguments.count)]
                try target.transaction { db in
                    let statement = try db.cachedStatement(sql: sql)
                    for values in slice { try statement.execute(arguments: values) }
                }
            }
        }
    }
}
