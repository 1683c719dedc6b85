import Foundation
import GRDB

/// A plain SQLite file with the benchmark table and the store's connection settings (WAL,
/// `synchronous=NORMAL`): the untracked and session baselines.
enum PlainDatabase {
    static func open(_ path: String, create: Bool = false) throws -> DatabaseQueue {
        var config = Configuration()
        config.busyMode = .timeout(30)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let queue = try DatabaseQueue(path: path, configuration: config)
        if create { try queue.write { db in try db.execute(sql: Fixtures.schema) } }
        return queue
    }

    /// Runs `body` in one immediate transaction, as `Store.write` does.
    static func transaction(_ queue: DatabaseQueue, _ body: (Database) throws -> Void) throws {
        try queue.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                try body(db)
                return .commit
            }
        }
    }

    /// Copies a closed database file (and its WAL, if one was left) to `destination`.
    static func copy(_ source: String, to destination: String) throws {
        let files = FileManager.default
        for suffix in ["", "-wal"] where files.fileExists(atPath: source + suffix) {
            try? files.removeItem(atPath: destination + suffix)
            try files.copyItem(atPath: source + suffix, toPath: destination + suffix)
        }
        try? files.removeItem(atPath: destination + "-shm")
    }

    /// Copies the plain database `base` to `target`, times `write` on it in one immediate
    /// transaction (as an import runs), and returns the seconds and what `check` reads after.
    static func timedTransaction<T>(
        base: String, target: String, _ write: (Database) throws -> Void, check: (Database) throws -> T
    ) throws -> (seconds: Double, checked: T) {
        try copy(base, to: target)
        defer { Fixtures.removeStore(target) }
        let queue = try open(target)
        let seconds = try timed { try transaction(queue, write) }.seconds
        return (seconds, try queue.read(check))
    }
}
