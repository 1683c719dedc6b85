import Foundation
import GRDB
import Tidemark

/// Issue 13's join: a new replica catching up on a group's --rows rows from a snapshot (the way
/// a member that joins, or returns past the horizon, does: Protocol/pruning.md §5), against the
/// same number of rows inserted into an empty plain table by `sqlite3changeset_apply`. Both in
/// this process, alternating every repetition, each on a fresh empty target.
struct JoinWorkload {
    var rows: Int
    var repetitions: Int

    func run(in scratch: URL) throws -> [Report.Row] {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        Output.progress("join: building a store with \(rows) rows and its snapshot")
        let (source, key, _) = try Fixtures.sourceAndEmptyTarget(changes: rows, in: scratch)
        let snapshot = try source.exportSnapshot(to: path("snapshot.tms"), key: key)
        Output.progress("join: snapshot of \(snapshot.bytes) bytes; recording the same rows as a changeset")
        let changeset = try insertsChangeset(plain: path("plain-source.sqlite"))
        _ = try PlainDatabase.open(path("plain-empty.sqlite"), create: true)

        var ours: [Double] = []
        var baseline: [Double] = []
        for round in 0...repetitions {
            Output.progress("join: " + (round == 0 ? "warm-up" : "repetition \(round)/\(repetitions)"))
            for catchUp in round % 2 == 0 ? [true, false] : [false, true] {
                let seconds: Double
                if catchUp {
                    let target = path("joined-\(round).sqlite")
                    let imported = try {
                        let (store, targetKey) = try Fixtures.copyOfEmptyTarget(in: scratch, to: target)
                        return try timed { try store.importBundle(at: path("snapshot.tms"), key: targetKey) }
                    }()
                    Fixtures.removeStore(target)
                    try expect("rows the snapshot applied", imported.value.appliedChanges)
                    seconds = imported.seconds
                } else {
                    let target = path("plain-\(round).sqlite")
                    try PlainDatabase.copy(path("plain-empty.sqlite"), to: target)
                    let (applied, count) = try {
                        let queue = try PlainDatabase.open(target)
                        let applied = try timed {
                            try PlainDatabase.transaction(queue) { db in try SessionRecorder.apply(changeset, to: db) }
                        }
                        return (
                            applied, try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items") }
                        )
                    }()
                    Fixtures.removeStore(target)
                    try expect("rows the changeset applied", count ?? 0)
                    seconds = applied.seconds
                }
                guard round > 0 else { continue }
                if catchUp { ours.append(Double(rows) / seconds) } else { baseline.append(Double(rows) / seconds) }
            }
        }
        return [
            Report.Row(
                metric: "join.snapshot", ours: Measurement(samples: ours), baseline: Measurement(samples: baseline),
                baselineName: "changeset_apply of the inserts", unit: "rows/s", goal: .atLeast(0.5)),
            try catchUp(source: source, key: key, in: scratch),
        ]
    }

    /// A replica that holds the rows of the first snapshot catching up from the sender's next one,
    /// after the sender deleted a row and dropped its tombstone (Protocol/pruning.md §5.2, §6.6),
    /// against a new replica joining from that next snapshot. Both on fresh copies of the empty
    /// target, alternating.
    private func catchUp(source: Store, key: KeyFile, in scratch: URL) throws -> Report.Row {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        let folder = path("catch-up-folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        _ = try source.execute(sql: "DELETE FROM items WHERE id = 'k00000000'")
        _ = try source.push(to: folder, key: key)
        _ = try source.pull(from: folder, key: key)  // prunes: the tombstone goes
        guard try source.status().tombstones == 0 else {
            throw BenchError.unexpectedState(
                metric: "join.catch_up", side: .tracked, what: "tombstones left at the sender", expected: 0,
                found: Int64(try source.status().tombstones))
        }
        _ = try source.exportSnapshot(to: path("next.tms"), key: key)
        var ours: [Double] = []
        var baseline: [Double] = []
        for round in 0...repetitions {
            Output.progress("join: catch-up " + (round == 0 ? "warm-up" : "repetition \(round)/\(repetitions)"))
            for holding in round % 2 == 0 ? [true, false] : [false, true] {
                let target = path("catching-up-\(round).sqlite")
                // The store is closed when the closure returns, before its rows are counted.
                let seconds = try {
                    let (store, targetKey) = try Fixtures.copyOfEmptyTarget(in: scratch, to: target)
                    if holding { _ = try store.importBundle(at: path("snapshot.tms"), key: targetKey) }
                    return try timed { try store.importBundle(at: path("next.tms"), key: targetKey) }.seconds
                }()
                let rows = try DatabaseQueue(path: target).read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM items")
                }
                Fixtures.removeStore(target)
                guard rows == self.rows - 1 else {
                    throw BenchError.unexpectedState(
                        metric: "join.catch_up", side: .tracked, what: "rows after the import",
                        expected: Int64(self.rows - 1), found: Int64(rows ?? 0))
                }
                guard round > 0 else { continue }
                if holding { ours.append(seconds) } else { baseline.append(seconds) }
            }
        }
        return Report.Row(
            metric: "join.catch_up", ours: Measurement(samples: ours), baseline: Measurement(samples: baseline),
            baselineName: "joining an empty store from it", unit: "s", goal: nil)
    }

    /// A changeset inserting `rows` rows like the source's into an empty `items` table, recorded on
    /// a plain database at `plain`.
    private func insertsChangeset(plain: String) throws -> Data {
        let queue = try PlainDatabase.open(plain, create: true)
        let recorder = try queue.writeWithoutTransaction { db in try SessionRecorder(db: db, table: "items") }
        try PlainDatabase.transaction(queue) { db in
            try db.execute(sql: Fixtures.fillSQL(rows: rows))
        }
        return try recorder.changeset()
    }

    private func expect(_ what: String, _ found: Int) throws {
        guard found == rows else {
            throw BenchError.unexpectedState(
                metric: "join.snapshot", side: .tracked, what: what, expected: Int64(rows), found: Int64(found))
        }
    }
}
