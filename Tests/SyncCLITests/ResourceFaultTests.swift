import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The built `sync` binary against resource faults: a full disk (a file size limit), folders and
/// stores it may not write, and a store another process keeps locked. Each fault gives one
/// `error:` line naming the file and the cause and a `hint:` saying what to do, leaves nothing
/// half-written, and the same command succeeds once the cause is gone.
@Suite struct ResourceFaultTests {
    /// 24 rows of 64 KiB random bytes: about 1.5 MB in a bundle, since random bytes do not compress.
    static let bigRows =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 24) INSERT INTO items(id, photo) SELECT 'big-' || i, randomblob(65536) FROM n"
    /// The file size limit, in the shell's 512-byte blocks (bash outside POSIX mode counts 1024):
    /// well above what the stores need before the fault, well below the bundle and what importing it writes.
    static let limitBlocks = 600

    /// Two replicas that trust each other, `a` holding the big rows, and an exchange folder.
    struct Fixture {
        let a: CLIStore
        let b: CLIStore
        let exchange: TemporaryDirectory

        init(big: Bool = true) async throws {
            a = try await CLIStore(replica: "a")
            b = try await CLIStore(replica: "b")
            exchange = try TemporaryDirectory("tidemark-cli-exchange")
            try await a.trust(b, as: "b")
            try await b.trust(a, as: "a")
            try await a.exec(big ? ResourceFaultTests.bigRows : "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
            try await b.exec("INSERT INTO items(id, name) VALUES ('b-1', 'mine')")
        }

        /// Every file under the exchange folder, hidden ones included, relative to it.
        func exchangeFiles() -> [String] {
            (FileManager.default.subpaths(atPath: exchange.path) ?? []).filter {
                var isDirectory: ObjCBool = false
                return FileManager.default.fileExists(atPath: exchange.path + "/" + $0, isDirectory: &isDirectory)
                    && !isDirectory.boolValue
            }.sorted()
        }

        /// Every path the commands touch, for `Unprivileged.run`.
        var paths: [String] { [a.directory.path, b.directory.path, exchange.path] }
    }

    /// The names in a directory, hidden ones included.
    static func names(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    static func integrity(_ store: CLIStore, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(
            try await SQLiteShell.execute(store.path, "PRAGMA integrity_check") == "ok\n",
            sourceLocation: sourceLocation)
    }

    static func count(_ store: CLIStore, _ condition: String = "1") async throws -> Int {
        Int(
            try await SQLiteShell.execute(store.path, "SELECT count(*) FROM items WHERE \(condition)")
                .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    // MARK: - Disk full (file size limit)

    @Test func anExportThatFillsTheDiskLeavesNoFileAndSucceedsOnRetry() async throws {
        let f = try await Fixture()
        let out = f.a.directory.file("out.tmb")
        let token = History.Token.zero.description
        let before = Self.names(in: f.a.directory.path)

        let result = try await FileSizeLimit.run(
            blocks: Self.limitBlocks, ["export", "--store", f.a.path, "--since", token, "--out", out])
        expectFailure(
            result, "cannot write a new file in \(f.a.directory.path) (.tmp-",
            hint: "raise the file size limit (ulimit -f unlimited), then run the command again")
        #expect(
            result.errorLines.first?.contains("file too large: the file size limit of this process (ulimit -f) is ")
                == true, "\(result)")
        #expect(
            result.errorLines.first?.hasSuffix("the partial file was removed and nothing was published") == true,
            "\(result)")
        // Neither the bundle nor its temporary is left; SQLite's -wal/-shm may stay until the next open.
        #expect(Self.names(in: f.a.directory.path).filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") } == before)
        try await Self.integrity(f.a)

        let retry = try await f.a.sync("export", "--since", token, "--out", out)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        let imported = try await f.b.sync("import", out)
        #expect(imported.exitCode == 0 && imported.stderr.isEmpty, "\(imported)")
        #expect(try await Self.count(f.b, "id LIKE 'big-%' AND length(photo) = 65536") == 24)
    }

    @Test func aPushThatFillsTheDiskPublishesNothingAndSucceedsOnRetry() async throws {
        let f = try await Fixture()
        let folder = f.exchange.path + "/" + (try await f.a.id()).description

        let result = try await FileSizeLimit.run(
            blocks: Self.limitBlocks, ["push", "--store", f.a.path, "--to", f.exchange.path])
        expectFailure(
            result, "cannot write a new file in \(folder) (.tmp-",
            hint: "raise the file size limit (ulimit -f unlimited)")
        #expect(
            result.errorLines.first?.contains("file too large: the file size limit of this process (ulimit -f) is ")
                == true, "\(result)")
        #expect(result.errorLines.first?.hasSuffix("nothing was published") == true, "\(result)")
        #expect(f.exchangeFiles() == [], "a partial file was left: \(f.exchangeFiles())")

        // A peer pulling now finds nothing to apply and nothing to warn about.
        let early = try await f.b.sync("pull", "--from", f.exchange.path, "--no-prune")
        #expect(early.exitCode == 0 && early.stderr.isEmpty, "\(early)")
        #expect(try await Self.count(f.b, "id LIKE 'big-%'") == 0)

        let retry = try await f.a.sync("push", "--to", f.exchange.path)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(Self.names(in: folder) == ["0000000001.tmb"])
        let pulled = try await f.b.sync("pull", "--from", f.exchange.path, "--no-prune")
        #expect(pulled.exitCode == 0 && pulled.stderr.isEmpty, "\(pulled)")
        #expect(try await Self.count(f.b, "id LIKE 'big-%' AND length(photo) = 65536") == 24)
    }

    @Test func anImportThatFillsTheDiskLeavesTheStoreUnchangedAndSucceedsOnRetry() async throws {
        let f = try await Fixture()
        let bundle = try await f.a.exportAll()
        let before = try await f.b.dump()

        let result = try await FileSizeLimit.run(blocks: Self.limitBlocks, ["import", "--store", f.b.path, bundle])
        expectFailure(
            result,
            "\(f.b.path): cannot write the store: file too large: the file size limit of this process (ulimit -f) is ",
            hint: "raise the file size limit (ulimit -f unlimited), then run the command again")
        #expect(result.errorLines.first?.hasSuffix("the write was rolled back") == true, "\(result)")
        #expect(try await f.b.dump() == before)
        try await Self.integrity(f.b)

        let retry = try await f.b.sync("import", bundle)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(try await Self.count(f.b, "id LIKE 'big-%' AND length(photo) = 65536") == 24)
        try await Self.integrity(f.b)
    }

    @Test func aPullThatFillsTheDiskLeavesTheStoreUnchangedAndSucceedsOnRetry() async throws {
        let f = try await Fixture()
        let pushed = try await f.a.sync("push", "--to", f.exchange.path)
        try #require(pushed.exitCode == 0, "\(pushed)")
        let before = try await f.b.dump()

        let result = try await FileSizeLimit.run(
            blocks: Self.limitBlocks, ["pull", "--store", f.b.path, "--from", f.exchange.path])
        expectFailure(result, "\(f.b.path): cannot write the store: file too large", hint: "raise the file size limit")
        #expect(Self.withoutFolders(try await f.b.dump()) == Self.withoutFolders(before))
        try await Self.integrity(f.b)
        // b wrote no watermark: the pull stopped before it.
        #expect(!f.exchangeFiles().contains { $0.hasSuffix("watermark.tmw") })

        let retry = try await f.b.sync("pull", "--from", f.exchange.path)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(try await Self.count(f.b, "id LIKE 'big-%' AND length(photo) = 65536") == 24)
    }

    // MARK: - Folders that cannot be written or read

    @Test(.enabled(if: Unprivileged.available, "running as root without setpriv: permission bits do not stop root"))
    func aPushToAReadOnlyFolderSaysSoAndSucceedsOnceItIsWritable() async throws {
        let f = try await Fixture(big: false)
        let store = try await f.a.dump()
        chmod(f.exchange.path, 0o500)
        defer { chmod(f.exchange.path, 0o755) }
        let folder = f.exchange.path + "/" + (try await f.a.id()).description

        let result = try await Unprivileged.run(
            ["push", "--store", f.a.path, "--to", f.exchange.path], owning: f.paths)
        expectFailure(
            result, "cannot write \(folder): folder \(f.exchange.path) is not writable by this user (mode 0500)")
        #expect(f.exchangeFiles() == [])
        #expect(Self.withoutFolders(try await f.a.dump()) == Self.withoutFolders(store))

        chmod(f.exchange.path, 0o755)
        let retry = try await Unprivileged.run(["push", "--store", f.a.path, "--to", f.exchange.path], owning: f.paths)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(f.exchangeFiles() == [(try await f.a.id()).description + "/0000000001.tmb"])
    }

    @Test(.enabled(if: Unprivileged.available, "running as root without setpriv: permission bits do not stop root"))
    func aPushIntoItsOwnReadOnlyFolderPublishesNothing() async throws {
        let f = try await Fixture(big: false)
        let id = (try await f.a.id()).description
        let folder = f.exchange.path + "/" + id
        let first = try await Unprivileged.run(["push", "--store", f.a.path, "--to", f.exchange.path], owning: f.paths)
        try #require(first.exitCode == 0, "\(first)")
        try await f.a.exec("INSERT INTO items(id) VALUES ('a-2')")
        chmod(folder, 0o500)
        defer { chmod(folder, 0o755) }

        let result = try await Unprivileged.run(
            ["push", "--store", f.a.path, "--to", f.exchange.path], owning: f.paths)
        expectFailure(
            result, "cannot write a new file in \(folder) (.tmp-",
            hint: "let this user write \(folder) (see ls -ld \(folder); chmod u+w), then run the command again")
        #expect(
            result.errorLines.first?.contains(
                "permission denied; the partial file was removed and nothing was published") == true, "\(result)")
        #expect(f.exchangeFiles() == [id + "/0000000001.tmb"])

        chmod(folder, 0o755)
        let retry = try await Unprivileged.run(["push", "--store", f.a.path, "--to", f.exchange.path], owning: f.paths)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(f.exchangeFiles() == [id + "/0000000001.tmb", id + "/0000000002.tmb"])
    }

    @Test(.enabled(if: Unprivileged.available, "running as root without setpriv: permission bits do not stop root"))
    func aPullFromAnUnreadableFolderChangesNothingAndSucceedsOnceItIsReadable() async throws {
        let f = try await Fixture(big: false)
        let pushed = try await f.a.sync("push", "--to", f.exchange.path)
        try #require(pushed.exitCode == 0, "\(pushed)")
        let peerFolder = f.exchange.path + "/" + (try await f.a.id()).description
        let before = try await f.b.dump()

        // The whole folder, then only the peer's subfolder (which must not be skipped silently).
        for (locked, mode) in [(f.exchange.path, mode_t(0o000)), (peerFolder, mode_t(0o000))] {
            try Unprivileged.own(f.paths)
            chmod(locked, mode)
            let result = try await Unprivileged.run(
                ["pull", "--store", f.b.path, "--from", f.exchange.path], owning: [f.b.directory.path])
            chmod(locked, 0o755)
            expectFailure(
                result, "cannot read \(locked): permission denied",
                hint: "let this user read \(locked) (see ls -ld \(locked); chmod u+rx), then run the command again")
            #expect(
                Self.withoutFolders(try await f.b.dump()) == Self.withoutFolders(before), "\(locked): the store changed"
            )
        }
        #expect(!f.exchangeFiles().contains { $0.hasSuffix("watermark.tmw") })

        let retry = try await Unprivileged.run(
            ["pull", "--store", f.b.path, "--from", f.exchange.path], owning: f.paths)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(try await Self.count(f.b, "id = 'a-1'") == 1)
    }

    /// Runs as any user: a path that is a file cannot be a folder, even for root.
    @Test func aFolderPathThatIsAFileIsRefusedForPushAndPull() async throws {
        let f = try await Fixture(big: false)
        let file = f.exchange.file("not-a-folder")
        try "x".write(toFile: file, atomically: false, encoding: .utf8)
        let before = try await f.a.dump()
        for command in ["push", "pull"] {
            let result = try await f.a.sync(command, command == "push" ? "--to" : "--from", file)
            expectFailure(
                result, "cannot read \(file): it is a file, not a folder",
                hint: "check that \(file) and its folder exist")
        }
        #expect(try await f.a.dump() == before)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "x")
    }

    // MARK: - Stores that cannot be written

    @Test(.enabled(if: Unprivileged.available, "running as root without setpriv: permission bits do not stop root"))
    func aReadOnlyStoreFileNamesEveryFileToFixAndWorksOnceTheyAreWritable() async throws {
        let f = try await Fixture(big: false)
        let pushed = try await f.a.sync("push", "--to", f.exchange.path)
        try #require(pushed.exitCode == 0, "\(pushed)")
        let before = try await f.b.dump()
        chmod(f.b.path, 0o444)
        defer { chmod(f.b.path, 0o644) }

        let result = try await Unprivileged.run(
            ["pull", "--store", f.b.path, "--from", f.exchange.path], owning: f.paths)
        expectFailure(
            result, "\(f.b.path): the store cannot be written: ", hint: "make them writable: chmod u+w \(f.b.path)")
        #expect(result.errorLines.first?.contains("\(f.b.path) (mode 0444)") == true, "\(result)")
        #expect(!f.exchangeFiles().contains { $0.hasSuffix("watermark.tmw") })

        // Follow the hint as written: SQLite made its -wal and -shm files read-only too.
        let hint = try #require(result.hintLines.first)
        let files = try #require(hint.components(separatedBy: "chmod u+w ").last).split(separator: " ").map(String.init)
        #expect(files.first == f.b.path)
        for file in files { chmod(file, 0o644) }
        #expect(try await f.b.dump() == before)
        try await Self.integrity(f.b)

        let retry = try await Unprivileged.run(
            ["pull", "--store", f.b.path, "--from", f.exchange.path], owning: f.paths)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(try await Self.count(f.b, "id = 'a-1'") == 1)
    }

    /// A store that belongs to another user: the hint is to run as that user or to take the file
    /// over, not a chmod this user could neither make nor use.
    @Test(.enabled(if: Unprivileged.isRoot && Unprivileged.available, "needs root to leave the store to another user"))
    func aStoreOfAnotherUserSaysWhoseItIs() async throws {
        let f = try await Fixture(big: false)
        let before = try await f.b.dump()
        let result = try await Unprivileged.run(
            ["exec", "--store", f.b.path, "INSERT INTO items(id) VALUES ('b-2')"], owning: [])
        expectFailure(
            result,
            "\(f.b.path): the store cannot be written: the file belongs to root, not to this user: \(f.b.path) (mode 0644)",
            hint: "run the command as root, or give it to this user: chown nobody \(f.b.path)")
        #expect(try await f.b.dump() == before)
    }

    @Test(.enabled(if: Unprivileged.available, "running as root without setpriv: permission bits do not stop root"))
    func aStoreInAReadOnlyFolderSaysSQLiteNeedsToCreateFilesThere() async throws {
        let f = try await Fixture(big: false)
        let before = try await f.b.dump()
        let folder = f.b.directory.path
        try Unprivileged.own(f.paths)
        chmod(folder, 0o555)
        defer { chmod(folder, 0o755) }

        let result = try await Unprivileged.run(
            ["exec", "--store", f.b.path, "INSERT INTO items(id) VALUES ('b-2')"], owning: [])
        expectFailure(
            result,
            "\(f.b.path): the store cannot be written: its folder \(folder) is not writable (mode 0555), and SQLite must create store.db-wal and -shm there",
            hint: "make the folder writable: chmod u+w \(folder)")
        chmod(folder, 0o755)
        #expect(try await f.b.dump() == before)

        let retry = try await Unprivileged.run(
            ["exec", "--store", f.b.path, "INSERT INTO items(id) VALUES ('b-2')"], owning: f.paths)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(try await Self.count(f.b, "id = 'b-2'") == 1)
    }

    // MARK: - A store locked by another process

    /// Waits out the CLI's 30 s busy timeout once.
    @Test func aStoreLockedPastTheBusyTimeoutChangesNothingAndPullSucceedsOnceReleased() async throws {
        let f = try await Fixture(big: false)
        let pushed = try await f.a.sync("push", "--to", f.exchange.path)
        try #require(pushed.exitCode == 0, "\(pushed)")
        let before = try await f.b.dump()

        let holder = try await StoreLockHolder(store: f.b.path, sql: "INSERT INTO items(id) VALUES ('held')")
        let started = ContinuousClock.now
        let result = try await f.b.sync("pull", "--from", f.exchange.path)
        let waited = ContinuousClock.now - started
        await holder.release()
        expectFailure(
            result,
            "\(f.b.path): the store stayed locked by another process past the busy timeout; the write was not made",
            hint: "another program (a sqlite3 shell, an app, another sync) holds a write transaction on the store")
        #expect(waited >= .seconds(25), "gave up after \(waited), before the busy timeout")
        #expect(try await f.b.dump() == before)
        #expect(!f.exchangeFiles().contains { $0.hasSuffix("watermark.tmw") })

        let retry = try await f.b.sync("pull", "--from", f.exchange.path)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
        #expect(try await Self.count(f.b, "id = 'a-1'") == 1)
        #expect(try await Self.count(f.b, "id = 'held'") == 0)
    }

    /// A dump without its `tidemark_folders` rows: a push or pull records the folder before it
    /// touches it, the only bookkeeping a refused push or pull may leave.
    static func withoutFolders(_ dump: String) -> [String] {
        dump.split(separator: "\n").filter { !$0.hasPrefix("INSERT INTO tidemark_folders ") }.map(String.init)
    }
}
