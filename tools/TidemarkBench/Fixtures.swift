import Foundation
import GRDB
import Tidemark

/// The table, its rows and the files both sides write to.
enum Fixtures {
    /// A store named "source" holding `changes` inserts (one transaction), its key, and an empty
    /// replica "target" (at `empty.sqlite`) that trusts it, to copy for every import; in `scratch`.
    static func sourceAndEmptyTarget(changes: Int, in scratch: URL) throws -> (
        source: Store, key: KeyFile, target: Store
    ) {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        let (source, _) = try Store.initialize(
            path("source.sqlite"), setup: Store.Setup(replicaName: "source", schema: ("bench", schema)))
        _ = try source.execute(sql: fillSQL(rows: changes))
        let (target, _) = try Store.initialize(
            path("empty.sqlite"), setup: Store.Setup(replicaName: "target", schema: ("bench", schema)))
        try target.addPeer(name: "source", publicKeyBase64: Data(source.publicKey).base64EncodedString())
        return (source, try KeyFile.load(path("source.sqlite.key")), target)
    }

    /// Inserts `rows` rows into `items` in one statement.
    static func fillSQL(rows: Int) -> String {
        """
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows - 1))
        INSERT INTO items(id, title, qty, price, payload) SELECT printf('k%08d', i), 'Item ' || i, i, i * 0.25, randomblob(32) FROM n
        """
    }

    /// A fresh copy, at `target`, of the empty replica `sourceAndEmptyTarget` left in `scratch`,
    /// opened, with its key.
    static func copyOfEmptyTarget(in scratch: URL, to target: String) throws -> (store: Store, key: KeyFile) {
        let empty = scratch.appendingPathComponent("empty.sqlite").path
        for suffix in ["", "-wal", ".key"] where FileManager.default.fileExists(atPath: empty + suffix) {
            try FileManager.default.copyItem(atPath: empty + suffix, toPath: target + suffix)
        }
        return (try Store.open(target), try KeyFile.load(target + ".key"))
    }

    /// Removes a store made by `copyOfEmptyTarget` (once it is closed).
    static func removeStore(_ path: String) {
        for suffix in ["", "-wal", "-shm", ".key"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

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
