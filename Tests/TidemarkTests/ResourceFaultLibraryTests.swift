import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// The library against a store another process keeps locked: with a short busy timeout, export,
/// import and push fail with `StoreError.storeLocked` naming the store, change nothing, and work
/// once the lock is released.
@Suite struct ResourceFaultLibraryTests {
    struct Locked {
        let directory: TemporaryDirectory
        let a: TestReplica
        let b: TestReplica
        let exchange: String

        init() throws {
            directory = try TemporaryDirectory("tidemark-locked")
            let quick = Store.Options(busyTimeout: 0.3)
            a = try TestReplica("a", in: directory, options: quick)
            b = try TestReplica("b", in: directory, options: quick)
            try b.trust(a)
            _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
            exchange = directory.file("exchange")
            try FileManager.default.createDirectory(atPath: exchange, withIntermediateDirectories: false)
        }
    }

    @Test func exportOfALockedStoreSaysSoAndWorksOnceReleased() async throws {
        let f = try Locked()
        let holder = try await StoreLockHolder(store: f.a.path, sql: "INSERT INTO items(id) VALUES ('held')")
        let out = f.directory.file("out.tmb")
        #expect(throws: StoreError.storeLocked(path: f.a.path)) { try f.a.export(to: out) }
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: f.directory.path).allSatisfy { !$0.hasPrefix(".tmp-") })
        await holder.release()
        #expect(try f.a.export(to: out).transactionCount == 1)
    }

    @Test func importIntoALockedStoreChangesNothingAndWorksOnceReleased() async throws {
        let f = try Locked()
        let bundle = try f.a.export(to: f.directory.file("a.tmb")).path
        let before = try f.b.everything()
        let holder = try await StoreLockHolder(store: f.b.path, sql: "INSERT INTO items(id) VALUES ('held')")
        #expect(throws: StoreError.storeLocked(path: f.b.path)) { try f.b.store.importBundle(at: bundle) }
        await holder.release()
        #expect(try f.b.everything().differences(from: before, mine: "after", theirs: "before").isEmpty)
        #expect(try f.b.store.importBundle(at: bundle).appliedTransactions == 1)
    }

    @Test func pushFromALockedStorePublishesNothingAndWorksOnceReleased() async throws {
        let f = try Locked()
        let holder = try await StoreLockHolder(store: f.a.path, sql: "INSERT INTO items(id) VALUES ('held')")
        #expect(throws: StoreError.storeLocked(path: f.a.path)) { try f.a.store.push(to: f.exchange, key: f.a.key) }
        #expect(
            (FileManager.default.subpaths(atPath: f.exchange) ?? []).filter { !$0.hasSuffix("/") }.allSatisfy {
                !$0.contains(".tmb") && !$0.contains(".tmp-")
            })
        await holder.release()
        #expect(try f.a.store.push(to: f.exchange, key: f.a.key).path?.hasSuffix("/0000000001.tmb") == true)
    }

    /// SQLite's result codes become the typed cases, each naming the store and saying what to do.
    @Test func sqliteErrorsMapToTypedCasesWithAFix() throws {
        let directory = try TemporaryDirectory("tidemark-mapping")
        let path = directory.file("s.db")
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        func mapped(_ code: ResultCode, _ message: String = "m") -> StoreError? {
            StoreError(sqliteError: DatabaseError(resultCode: code, message: message), path: path)
        }
        #expect(mapped(.SQLITE_BUSY) == .storeLocked(path: path))
        #expect(mapped(.SQLITE_BUSY)?.hint?.contains("let it finish or close it, then run the command again") == true)
        #expect(mapped(.SQLITE_FULL) == .storeFull(path: path, .noSpace))
        #expect(
            mapped(.SQLITE_FULL)?.description
                == "\(path): cannot write the store: disk full (no space left on the device); the write was rolled back"
        )
        #expect(
            mapped(.SQLITE_FULL)?.hint == "free space on the disk holding \(directory.path), then run the command again"
        )
        #expect(mapped(.SQLITE_IOERR_WRITE, "disk I/O error") == .storeIOError(path: path, message: "disk I/O error"))
        #expect(mapped(.SQLITE_IOERR_WRITE)?.hint?.contains("PRAGMA integrity_check") == true)
        #expect(mapped(.SQLITE_NOTADB) == .notADatabase(path: path))
        #expect(
            mapped(.SQLITE_CONSTRAINT, "UNIQUE constraint failed")
                == .database(path: path, message: "UNIQUE constraint failed"))
        #expect(StoreError(sqliteError: CocoaError(.fileNoSuchFile), path: path) == nil)
        guard case .fileTooLarge = FileFault(errno: EFBIG) else {
            Issue.record("EFBIG is \(FileFault(errno: EFBIG))")
            return
        }
        #expect(FileFault(errno: ENOSPC).description == "disk full (no space left on the device)")
        #expect(FileFault(errno: EROFS).description == "the file system is read-only")
        #expect(FileFault(errno: EACCES) == .permissionDenied)
    }
}
