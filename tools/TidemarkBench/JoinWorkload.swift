import Foundation
import GRDB
import Tidemark

/// Issue 13's join: a new replica catching up on a group's --rows rows from a snapshot (the way
/// a member that joins, or returns past the horizon, does: Protocol/pruning.md §5), against the
/// same number of rows inserted into an empty plain table by `sqlite3changeset_apply`, and the
/// physical limits: those rows inserted by one SQL statement, the snapshot's bytes copied. All in this
/// process, alternating every repetition, each on a fresh empty target.
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

        var samples: [Side: [Double]] = [:]
        for round in 0...repetitions {
            Output.progress("join: " + (round == 0 ? "warm-up" : "repetition \(round)/\(repetitions)"))
            let sides = round % 2 == 0 ? Side.allCases : Side.allCases.reversed()
            for side in sides {
                let seconds = try measure(side, round: round, changeset: changeset, source: (source, key), in: scratch)
                if round > 0 { samples[side, default: []].append(Double(rows) / seconds) }
            }
        }
        let ours = Measurement(samples: samples[.snapshot]!)
        return [
            Report.Row(
                metric: "join.snapshot", ours: ours, baseline: Measurement(samples: samples[.changeset]!),
                baselineName: "changeset_apply of the inserts", unit: "rows/s", goal: .atLeast(0.5)),
            Report.Row(
                metric: "join.limit.sql_writes", ours: ours, baseline: Measurement(samples: samples[.sqlWrites]!),
                baselineName: "one SQL INSERT of the rows", unit: "rows/s", goal: nil),
            Report.Row(
                metric: "join.limit.file_copy", ours: ours, baseline: Measurement(samples: samples[.fileCopy]!),
                baselineName: "copy of the snapshot", unit: "rows/s", goal: nil),
            Report.Row(
                metric: "snapshot.export", ours: Measurement(samples: samples[.snapshotExport]!),
                baseline: Measurement(samples: samples[.sqlRead]!), baselineName: "one SQL read of the rows",
                unit: "rows/s", goal: nil),
            try catchUp(source: source, key: key, in: scratch),
        ]
    }

    /// What a repetition times: the snapshot applied by a new replica, the baseline changeset
    /// applied to an empty plain table, and the physical limits (the same rows inserted by one
    /// SQL statement, the snapshot's bytes copied); and the snapshot written by the source, against
    /// one SQL statement stepping through the same rows of the plain table, evaluating an
    /// expression over every column and returning only a count.
    private enum Side: CaseIterable {
        case snapshot, changeset, sqlWrites, fileCopy, snapshotExport, sqlRead
    }

    private func measure(
        _ side: Side, round: Int, changeset: Data, source: (store: Store, key: KeyFile), in scratch: URL
    ) throws -> Double {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        let count = { (db: Database) in try Int.fetchOne(db, sql: "SELECT count(*) FROM items") ?? 0 }
        switch side {
        case .snapshot:
            let target = path("joined-\(round).sqlite")
            let imported = try {
                let (store, targetKey) = try Fixtures.copyOfEmptyTarget(in: scratch, to: target)
                return try timed { try store.importBundle(at: path("snapshot.tms"), key: targetKey) }
            }()
            Fixtures.removeStore(target)
            try expect("rows the snapshot applied", imported.value.appliedChanges)
            return imported.seconds
        case .changeset:
            let applied = try PlainDatabase.timedTransaction(
                base: path("plain-empty.sqlite"), target: path("plain-\(round).sqlite"),
                { db in try SessionRecorder.apply(changeset, to: db) }, check: count)
            try expect("rows the changeset applied", applied.checked)
            return applied.seconds
        case .sqlWrites:
            let written = try PlainDatabase.timedTransaction(
                base: path("plain-empty.sqlite"), target: path("plain-\(round).sqlite"),
                { db in try db.execute(sql: Fixtures.fillSQL(rows: rows)) }, check: count)
            try expect("rows the SQL INSERT wrote", written.checked)
            return written.seconds
        case .fileCopy:
            return try PhysicalLimits.copySeconds(path("snapshot.tms"), to: path("copy.tms"))
        case .snapshotExport:
            let file = path("export-\(round).tms")
            let exported = try timed { try source.store.exportSnapshot(to: file, key: source.key) }
            try FileManager.default.removeItem(atPath: file)
            try expect("rows the snapshot holds", exported.value.changeCount)
            return exported.seconds
        case .sqlRead:
            let queue = try PlainDatabase.open(path("plain-source.sqlite"))
            let read = try timed {
                try queue.read { db in
                    try Int.fetchOne(
                        db,
                        sql:
                            "SELECT count(*) FROM items WHERE length(id) + length(title) + qty + price + length(payload) IS NOT NULL"
                    ) ?? 0
                }
            }
            try expect("rows one SQL statement read", read.value)
            return read.seconds
        }
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
