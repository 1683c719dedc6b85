import Foundation
import GRDB
import Tidemark

/// Which copy of the table a workload writes to.
enum Side: String, CaseIterable {
    /// A Tidemark store: capture triggers record every change, `Store.write` seals each transaction.
    case tracked
    /// A plain SQLite file with the same schema and connection settings.
    case untracked
}

/// Where a workload writes. Both sides open one GRDB `DatabaseQueue` in WAL mode with
/// `synchronous=NORMAL` and write through `writeWithoutTransaction` + `inTransaction(.immediate)`.
protocol BenchTarget: AnyObject {
    var side: Side { get }
    /// Runs `body` as one immediate write transaction (timed by the caller).
    func transaction(_ body: (Database) throws -> Void) throws
    /// Reads for checks outside the timed region.
    func read<T>(_ body: (Database) throws -> T) throws -> T
    /// History changes sealed by `transaction` so far; nil on the untracked side.
    var capturedChanges: Int64? { get }
}

/// The tracked side: writes go through `Store.write`, which includes sealing the transaction.
final class TrackedTarget: BenchTarget {
    let store: Store
    private var sealed: Int64 = 0

    init(path: String) throws {
        let setup = Store.Setup(replicaName: "bench", schema: (file: "bench", sql: Fixtures.schema))
        store = try Store.initialize(path, setup: setup).store
    }

    var side: Side { .tracked }
    var capturedChanges: Int64? { sealed }

    func transaction(_ body: (Database) throws -> Void) throws {
        let (_, commit) = try store.write(body)
        sealed += commit?.changeCount ?? 0
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try store.write(body).0
    }
}

/// The untracked side: plain GRDB on a file with the same schema.
final class UntrackedTarget: BenchTarget {
    let queue: DatabaseQueue

    init(path: String) throws {
        // The same settings as the store's connection (`StoreConnection.open` and `Store.initialize`).
        var config = Configuration()
        config.busyMode = .timeout(30)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        queue = try DatabaseQueue(path: path, configuration: config)
        try queue.write { db in try db.execute(sql: Fixtures.schema) }
    }

    var side: Side { .untracked }
    var capturedChanges: Int64? { nil }

    func transaction(_ body: (Database) throws -> Void) throws {
        try queue.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                try body(db)
                return .commit
            }
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.writeWithoutTransaction(body)
    }
}
