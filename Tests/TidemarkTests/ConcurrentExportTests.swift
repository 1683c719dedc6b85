import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Exports and snapshots while another connection keeps writing to the same store: a write that
/// lands between an export's fold and its read must wait for the next export, never travel
/// without the generations the fold gives its changes.
@Suite struct ConcurrentExportTests {
    /// Another connection to `path` writes one transaction after another until `stop()`.
    final class Writer: @unchecked Sendable {  // @unchecked: `stopped`, `written` and `done` are guarded by `lock`.
        private let lock = NSLock()
        private var stopped = false
        private var written = 0
        private var done = false

        init(path: String) throws {
            let store = try Store.open(path)
            Thread { [self] in
                var i = 0
                // A bounded stream, paced so that exports run while it flows.
                while !lock.withLock({ stopped }) && i < 2_000 {
                    _ = try? store.execute(
                        sql:
                            "INSERT INTO items(id, qty) VALUES ('w-\(i)', \(i)); UPDATE items SET qty = qty + 1 WHERE id = 'w-0'"
                    )
                    i += 1
                    lock.withLock { written = i }
                    Thread.sleep(forTimeInterval: 0.001)
                }
                lock.withLock { done = true }
            }.start()
        }

        /// Stops the writer and returns how many transactions it wrote.
        func stop() -> Int {
            lock.withLock { stopped = true }
            while !lock.withLock({ done }) { Thread.sleep(forTimeInterval: 0.01) }
            return lock.withLock { written }
        }
    }

    /// The user rows of a store.
    static func items(_ path: String) throws -> StoreSnapshot {
        try StoreSnapshot.trackedTables(of: path).removing { table, _ in table != "items" }
    }

    @Test func bundlesExportedDuringConcurrentWritesAllImportAndConverge() throws {
        let directory = try TemporaryDirectory("tidemark-concurrent-export")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        let writer = try Writer(path: a.path)
        var since = try b.store.currentToken()
        for round in 0..<100 {
            let file = directory.file("a-\(round).tmb")
            let summary = try a.store.exportBundle(since: since, to: file, key: a.key)
            #expect(throws: Never.self, "bundle \(round) (\(summary.changeCount) changes) must import") {
                _ = try b.store.importBundle(at: file)
            }
            since = summary.through
        }
        let written = writer.stop()
        let last = directory.file("a-last.tmb")
        _ = try a.store.exportBundle(since: since, to: last, key: a.key)
        _ = try b.store.importBundle(at: last)
        #expect(written > 0)
        #expect(try Self.items(a.path) == Self.items(b.path))
    }

    @Test func snapshotsTakenDuringConcurrentWritesJoinToTheSameRows() throws {
        let directory = try TemporaryDirectory("tidemark-concurrent-snapshot")
        let a = try TestReplica("a", in: directory)
        let writer = try Writer(path: a.path)
        var joined: [String] = []
        for round in 0..<20 {
            let file = directory.file("a-\(round).tms")
            _ = try a.store.exportSnapshot(to: file, key: a.key)
            joined.append(file)
        }
        _ = writer.stop()
        // Every snapshot is a consistent state: a replica that joins from it and then imports the
        // rest of a's history holds a's rows.
        for (index, file) in joined.enumerated().filter({ $0.offset % 5 == 4 }) {
            let c = try TestReplica("c\(index)", in: directory)
            try c.trust(a)
            _ = try c.store.importBundle(at: file)
            let rest = directory.file("rest-\(index).tmb")
            _ = try a.store.exportBundle(since: try c.store.currentToken(), to: rest, key: a.key)
            _ = try c.store.importBundle(at: rest)
            #expect(try Self.items(a.path) == Self.items(c.path), "joined from snapshot \(index)")
        }
    }
}
