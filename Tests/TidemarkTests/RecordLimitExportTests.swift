import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Exports and snapshots of a row whose values exceed what one bundle record may carry
/// (Protocol/bundle.md §4.1, R36: 64 MiB of TEXT and BLOB values, key values included): they fail
/// with `ExchangeError.rowTooLarge`, naming the table and the row, and write nothing, instead of
/// publishing a bundle that every reader would reject.
@Suite(.serialized) struct RecordLimitExportTests {
    static let mebibyte = 1 << 20

    /// A replica `a` whose `items` row 'big' holds two BLOBs: `photo` and `note` (an untyped column).
    static func replica(photo: Int, note: Int) throws -> (TemporaryDirectory, TestReplica) {
        let directory = try TemporaryDirectory("tidemark-record-limit")
        let a = try TestReplica("a", in: directory)
        _ = try a.store.execute(
            sql: "INSERT INTO items(id, name, photo, note) VALUES ('big', NULL, zeroblob(\(photo)), zeroblob(\(note)))")
        return (directory, a)
    }

    /// The files in `directory` other than the store's own (database, key, SQLite's journals).
    static func leftovers(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix("a.") }.sorted()
    }

    @Test func exportingARowOfTwo40MiBBlobsFailsNamingTheRowAndWritesNothing() throws {
        let (directory, a) = try Self.replica(photo: 40 * Self.mebibyte, note: 40 * Self.mebibyte)
        let out = directory.file("a-1.tmb")
        let expectedBytes = 80 * Self.mebibyte + 3  // the two BLOBs and the key 'big'
        #expect(throws: ExchangeError.rowTooLarge(path: out, table: "items", key: "(id = 'big')", bytes: expectedBytes))
        {
            _ = try a.store.exportBundle(since: .zero, to: out, key: a.key)
        }
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(try Self.leftovers(directory) == [], "no bundle and no temporary file is left")

        do {
            _ = try a.store.exportBundle(since: .zero, to: out, key: a.key)
            Issue.record("the export succeeded")
        } catch let error as ExchangeError {
            #expect(
                error.description
                    == "cannot export \(out): row (id = 'big') of table 'items' holds \(expectedBytes) bytes of values; a bundle record "
                    + "holds at most 67108864 bytes (64 MiB) of TEXT and BLOB values, so no peer could read it; nothing was written"
            )
            let hint = try #require(error.hint)
            #expect(hint.contains("within 64 MiB"), "\(hint)")
            #expect(hint.contains("then update or delete this row"), "\(hint)")
        }

        // The store is unchanged by the failed export: history still holds the insert.
        #expect(try a.store.fetchHistory().flatMap(\.changes).count == 1)
    }

    @Test func aSnapshotOfTheRowFailsTooAndSucceedsOnceTheRowIsSmaller() throws {
        let (directory, a) = try Self.replica(photo: 40 * Self.mebibyte, note: 40 * Self.mebibyte)
        let out = directory.file("a.tms")
        #expect(
            throws: ExchangeError.rowTooLarge(
                path: out, table: "items", key: "(id = 'big')", bytes: 80 * Self.mebibyte + 3)
        ) {
            _ = try a.store.exportSnapshot(to: out, key: a.key)
        }
        #expect(try Self.leftovers(directory) == [])

        // A snapshot carries the row as it is now: shrunk, it fits, and the file verifies.
        _ = try a.store.execute(sql: "UPDATE items SET note = NULL WHERE id = 'big'")
        let summary = try a.store.exportSnapshot(to: out, key: a.key)
        #expect(summary.changeCount == 1)
        let verified = try Store.inspectBundle(at: out) { _, _ in }
        #expect(verified.header.kind == .snapshot)
        // The change bundle still cannot be written: history holds the 80 MiB insert.
        #expect(throws: ExchangeError.self) {
            _ = try a.store.exportBundle(since: .zero, to: directory.file("a-1.tmb"), key: a.key)
        }
        // What a peer lacks then goes as a snapshot (`export --since`, `--peer`).
        let lacked = try a.store.exportWhatPeerLacks(since: .zero, to: directory.file("a-2.tms"), key: a.key)
        #expect(lacked.kind == .snapshot)
    }

    @Test func pushingTheRowFailsNamingTheFolderAndPublishesNothing() throws {
        let (directory, a) = try Self.replica(photo: 40 * Self.mebibyte, note: 40 * Self.mebibyte)
        let folder = directory.file("exchange")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        do {
            _ = try a.store.push(to: folder, key: a.key)
            Issue.record("the push succeeded")
        } catch let error as ExchangeError {
            guard case .rowTooLarge(_, "items", "(id = 'big')", 80 * Self.mebibyte + 3) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(error.description.hasPrefix("cannot export to \(folder)/"), "\(error.description)")
            #expect(!error.description.contains(".tmp-"), "\(error.description)")
        }
        let files = FileManager.default.enumerator(atPath: folder)?.allObjects.compactMap { $0 as? String } ?? []
        let published = files.filter { $0.hasSuffix(".tmb") || ($0 as NSString).lastPathComponent.hasPrefix(".tmp-") }
        #expect(published == [], "\(files)")
    }

    /// Exactly 64 MiB of values (key included) is within the limit: it exports and a peer imports
    /// the row intact.
    @Test func aRowOfExactly64MiBOfValuesExportsAndImports() throws {
        let limit = 64 * Self.mebibyte
        let (directory, a) = try Self.replica(photo: limit / 2, note: limit / 2 - 3)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        let out = directory.file("a-1.tmb")
        _ = try a.store.exportBundle(since: .zero, to: out, key: a.key)
        let imported = try b.store.importBundle(at: out)
        #expect(imported.appliedChanges == 1)
        let lengths = try b.store.execute(
            sql: "SELECT length(photo), length(note), typeof(note) FROM items WHERE id = 'big'"
        ).0
        #expect(lengths.first?.rows == [[.integer(Int64(limit / 2)), .integer(Int64(limit / 2 - 3)), .text("blob")]])
    }

    /// A change too large for a bundle is in a's history, after changes b already has. Once the
    /// row is smaller again, a's push sends what history cannot carry as a snapshot of the rows as
    /// they are; b catches up from it, and later pushes are bundles again.
    @Test func onceTheRowIsSmallerAPushSendsWhatHistoryCannotCarryAsASnapshot() throws {
        let group = try ExchangeGroup(["a", "b"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('before', 'sent')")
        _ = try group.round()
        _ = try a.store.execute(
            sql: "INSERT INTO items(id, photo, note) VALUES ('big', zeroblob(\(40 * Self.mebibyte)), "
                + "zeroblob(\(40 * Self.mebibyte)))")
        #expect(throws: ExchangeError.self) { try group.push("a") }
        _ = try a.store.execute(sql: "UPDATE items SET note = NULL WHERE id = 'big'")
        let pushed = try group.push("a")
        #expect(pushed.snapshot == group.folder(of: "a") + "/snapshot.tms")
        // A bundle that assumes what the snapshot holds, so that readers know to take it.
        #expect(pushed.export?.transactionCount == 0)
        let pulled = try group.pull("b", prune: false)
        // The snapshot holds what the bundle carries, so only the snapshot is applied.
        #expect(pulled.imported.map(\.header.kind) == [.snapshot], "\(pulled.warnings)")
        #expect(try group["b"].tables() == a.tables())
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('after', 'a bundle again')")
        #expect(try group.push("a").path != nil)
        _ = try group.round()
        #expect(try group["b"].tables() == a.tables())
        #expect(try group["b"].tables()["items"]?.rows.count == 3)
    }
}
