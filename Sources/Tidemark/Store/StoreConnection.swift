import Foundation
import GRDB

/// Opens SQLite connections to a store with the settings every Tidemark connection uses.
enum StoreConnection {
    /// Opens `path`, which must already exist unless `create` is set.
    static func open(_ path: String, busyTimeout: TimeInterval, create: Bool = false) throws -> DatabaseQueue {
        if !create, !FileManager.default.fileExists(atPath: path) { throw StoreError.storeNotFound(path: path) }
        var config = Configuration()
        config.busyMode = .timeout(busyTimeout)
        config.label = "tidemark"
        config.prepareDatabase { db in
            // WAL makes a commit durable against process crashes at NORMAL; Debian defaults to FULL.
            if try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal" {
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
        }
        do {
            let queue = try DatabaseQueue(path: path, configuration: config)
            // Reading the schema is where a file that is not a database shows it.
            _ = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        } catch {
            throw mapped(error, path: path)
        }
    }

    /// Turns a SQLite error on `path` into the `StoreError` a user can act on.
    static func mapped(_ error: any Error, path: String) -> any Error {
        guard let dbError = error as? DatabaseError else { return error }
        return StoreError.mapping(dbError, path: path)
    }
}
