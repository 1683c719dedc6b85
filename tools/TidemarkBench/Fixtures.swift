import Foundation
import GRDB

/// The table, its rows and the files both sides write to.
enum Fixtures {
    /// The one table of every benchmark database, tracked or not.
    static let schema =
        "CREATE TABLE items(id TEXT PRIMARY KEY, title TEXT NOT NULL, qty INTEGER NOT NULL, price REAL, payload BLOB)"

    /// Row data, built once per run so generating it is never timed; both sides get the same values.
    struct Rows {
        /// `INSERT INTO items(id, title, qty, price, payload)`; row `i` has `qty = i`.
        let inserts: [StatementArguments]
        /// `UPDATE items SET qty = ? WHERE id = ?`; row `i` gets `qty = i + count`, so every update
        /// changes the row and `qty >= count` afterwards marks it as updated.
        let updates: [StatementArguments]
        /// `DELETE FROM items WHERE id = ?`.
        let deletes: [StatementArguments]

        var count: Int { inserts.count }

        init(count: Int) {
            let keys = (0..<count).map { String(format: "k%08d", $0) }
            inserts = keys.indices.map { i in
                let payload = Data((0..<32).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) })
                return [keys[i], "Item \(i)", i, Double(i) * 0.25, payload]
            }
            updates = keys.indices.map { i in [i + count, keys[i]] }
            deletes = keys.map { [$0] }
        }
    }

    /// Runs `body` with a new temporary directory, removed afterwards.
    static func withScratchDirectory<T>(_ body: (URL) throws -> T) throws -> T {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tidemark-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: url) }
        return try body(url)
    }

    /// Runs `body` with a new `side` target on fresh files under `scratch`. The target is closed and
    /// its files removed before this returns.
    static func withFreshTarget<T>(_ side: Side, under scratch: URL, _ body: (any BenchTarget) throws -> T) throws -> T
    {
        let directory = scratch.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("items.sqlite").path
        // The closure owns the only reference, so the connection closes when it returns.
        return try {
            let target: any BenchTarget =
                switch side {
                case .tracked: try TrackedTarget(path: path)
                case .untracked: try UntrackedTarget(path: path)
                case .triggerFloor: try UntrackedTarget(path: path, logTriggers: true)
                }
            try checkConnection(target)
            return try body(target)
        }()
    }

    /// Fails unless the target's connection uses the settings the comparison assumes.
    static func checkConnection(_ target: any BenchTarget) throws {
        let (journal, synchronous) = try target.read { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA synchronous"))
        }
        guard journal?.lowercased() == "wal", synchronous == 1 else {
            throw BenchError.connectionSettings(
                side: target.side, journalMode: journal ?? "?", synchronous: synchronous.map(String.init) ?? "?")
        }
    }
}
