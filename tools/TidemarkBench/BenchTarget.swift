import Foundation
import GRDB
import Tidemark

/// Which copy of the table a workload writes to.
enum Side: String, CaseIterable {
    /// A Tidemark store: capture triggers record every change, `Store.write` seals each transaction.
    case tracked
    /// A plain SQLite file with the same schema and connection settings.
    case untracked
    /// The untracked table plus the least a trigger can do to capture a change: copy the new row
    /// (or the deleted key) into an append-only log, with no comparison, clock or sealing. Tidemark
    /// captures through triggers so that every SQLite client's writes are captured; this side
    /// shows what any trigger-based capture costs before it does anything useful.
    case triggerFloor
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

    let side: Side

    /// The untracked side, or with `logTriggers` the trigger-floor side.
    init(path: String, logTriggers: Bool = false) throws {
        // The same settings as the store's connection (`StoreConnection.open` and `Store.initialize`).
        queue = try PlainDatabase.open(path, create: true)
        side = logTriggers ? .triggerFloor : .untracked
        if logTriggers { try queue.write { db in try db.execute(sql: Self.floorTriggers) } }
    }

    /// An append-only log as wide as the table, and one unconditional copy per write.
    static let floorTriggers = """
        CREATE TABLE log(id INTEGER PRIMARY KEY, op INTEGER NOT NULL, c0, c1, c2, c3, c4);
        CREATE TRIGGER log_insert AFTER INSERT ON items BEGIN
          INSERT INTO log(op, c0, c1, c2, c3, c4) VALUES (1, NEW.id, NEW.title, NEW.qty, NEW.price, NEW.payload);
        END;
        CREATE TRIGGER log_update AFTER UPDATE ON items BEGIN
          INSERT INTO log(op, c0, c1, c2, c3, c4) VALUES (2, NEW.id, NEW.title, NEW.qty, NEW.price, NEW.payload);
        END;
        CREATE TRIGGER log_delete AFTER DELETE ON items BEGIN
          INSERT INTO log(op, c0) VALUES (3, OLD.id);
        END;
        """
    /// Rows the floor triggers logged (checked like the tracked side's sealed changes); nil untracked.
    var capturedChanges: Int64? {
        guard side == .triggerFloor else { return nil }
        return try? queue.read { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM log") }
    }

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
