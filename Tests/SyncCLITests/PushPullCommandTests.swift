import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync push` and `sync pull` through a folder, run as the built binary: exact output, warnings
/// about junk in the folder, and the watermark a pull leaves.
@Suite struct PushPullCommandTests {
    /// A replica's own subfolder (as `push` prints a bundle's address) and a URL of a scheme other
    /// than http(s) are refused as exchange folders, naming what to give instead; the store does
    /// not remember them.
    @Test func aReplicasSubfolderOrAnotherURLSchemeIsNotAnExchange() async throws {
        let (a, b) = (try await CLIStore(replica: "a"), try await CLIStore(replica: "b"))
        try await CLIStore.trustEachOther([(a, "a"), (b, "b")])
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        let parent = URL(fileURLWithPath: exchange.path).standardizedFileURL.path + "/"
        let aFolder = parent + (try await a.id()).description
        let before = try await b.dump()
        expectFailure(
            try await b.sync("pull", "--from", aFolder + "/"),
            "cannot use \(aFolder)/ as an exchange folder: it is peer a's own subfolder of an exchange; give the exchange folder that holds it, \(parent)"
        )
        expectFailure(try await a.sync("push", "--to", aFolder), "it is this replica's own subfolder of an exchange")
        expectFailure(
            try await b.sync("pull", "--from", "davs://example.com/x/"),
            "davs:// is not supported: an exchange is a local folder or a WebDAV server's http:// or https:// URL; for a WebDAV server, give its https:// URL"
        )
        #expect(try await b.dump() == before)
        #expect(!FileManager.default.fileExists(atPath: "davs:"))
    }

    @Test func pushAndPullThroughAFolder() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.trust(b, as: "b")
        try await b.trust(a, as: "a")
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one'), ('a-2', 'two')")
        try await SQLiteShell.execute(a.path, "UPDATE items SET qty = 7 WHERE id = 'a-2'")
        let aFolder = exchange.path + "/" + (try await a.id()).description
        let first = aFolder + "/0000000001.tmb"

        let pushed = try await a.sync("push", "--to", exchange.path)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: first)[.size] as? Int)
        #expect(pushed.exitCode == 0 && pushed.stderr.isEmpty, "\(pushed)")
        #expect(pushed.stdoutLines == ["pushed 2 transactions, 3 changes, \(size) bytes to \(first)"])
        #expect(try await a.sync("push", "--to", exchange.path).stdoutLines == ["nothing new to push"])

        let pulled = try await b.sync("pull", "--from", exchange.path)
        #expect(pulled.exitCode == 0 && pulled.stderr.isEmpty, "\(pulled)")
        #expect(pulled.stdoutLines.first == "pulled 1 bundles: 2 transactions, 3 changes", "\(pulled)")
        #expect(pulled.stdoutLines.dropFirst().allSatisfy { $0.hasPrefix("pruned ") }, "\(pulled)")
        try a.expectSameTables(as: b)
        let again = try await b.sync("pull", "--from", exchange.path)
        #expect(again.stdoutLines == ["pulled 0 bundles: 0 transactions, 0 changes"], "\(again)")

        // Each replica wrote only in its own subfolder: a its bundle, b its watermark (and, if it
        // pruned, its snapshot).
        let (aID, bID) = ((try await a.id()).description, (try await b.id()).description)
        let files = FolderTree(exchange.path).files
        #expect(files.filter { $0.hasPrefix(aID + "/") } == [aID + "/0000000001.tmb"], "\(files)")
        #expect(
            Set(files.filter { $0.hasPrefix(bID + "/") }).subtracting([bID + "/snapshot.tms"]) == [
                bID + "/watermark.tmw"
            ], "\(files)")
        #expect(files.allSatisfy { $0.hasPrefix(aID + "/") || $0.hasPrefix(bID + "/") }, "\(files)")
    }

    @Test func textWithANULOrALineBreakArrivesWholeAndLogShowsItOnOneLine() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await CLIStore.trustEachOther([(a, "a"), (b, "b")])
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        // The sqlite3 shell writes what GRDB's rows would cut: text past a NUL character.
        try await SQLiteShell.execute(
            a.path, "INSERT INTO items(id, name) VALUES ('n', 'x' || char(0) || 'y'), ('l', 'one' || char(10) || 'two')"
        )
        let log = try await a.sync("log")
        #expect(log.stdout.contains("insert items [id='n'] name='x' || char(0) || 'y'"), "\(log)")
        #expect(log.stdout.contains("insert items [id='l'] name='one' || char(10) || 'two'"), "\(log)")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        #expect(try await b.sync("pull", "--from", exchange.path).exitCode == 0)
        let hex = "SELECT id, hex(name) FROM items ORDER BY id"
        #expect(try await SQLiteShell.execute(b.path, hex) == "l|6F6E650A74776F\nn|780079\n")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        #expect(try await b.sync("push", "--to", exchange.path).exitCode == 0)
        #expect(try await a.sync("pull", "--from", exchange.path).exitCode == 0)
        let status = try await a.sync("status")
        #expect(status.stdout.contains("same rows as here"), "\(status)")
    }

    @Test func aPullWarnsAboutDamagedTemporaryAndForeignFilesAndAppliesTheRest() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        let c = try await CLIStore(replica: "c")
        try await CLIStore.trustEachOther([(a, "a"), (b, "b"), (c, "c")])
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        _ = try await a.sync("push", "--to", exchange.path)
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        _ = try await a.sync("push", "--to", exchange.path)
        try await c.exec("INSERT INTO items(id) VALUES ('c-1')")
        _ = try await c.sync("push", "--to", exchange.path)
        let aFolder = exchange.path + "/" + (try await a.id()).description
        let cFolder = exchange.path + "/" + (try await c.id()).description

        // A copy still in progress, a writer's temporary file and a stranger's file.
        let second = aFolder + "/0000000002.tmb"
        let full = try Data(contentsOf: URL(fileURLWithPath: second))
        try full.prefix(full.count / 2).write(to: URL(fileURLWithPath: second))
        try full.prefix(40).write(to: URL(fileURLWithPath: aFolder + "/.tmp-xyz"))
        var random = SeededGenerator(seed: 7)
        let foreign = cFolder + "/0000000009.tmb"
        try Data((0..<512).map { _ in UInt8.random(in: 0...255, using: &random) }).write(
            to: URL(fileURLWithPath: foreign))

        let pulled = try await b.sync("pull", "--from", exchange.path)
        #expect(pulled.exitCode == 0, "\(pulled)")
        #expect(pulled.stdoutLines.first == "pulled 2 bundles: 2 transactions, 2 changes", "\(pulled)")
        #expect(pulled.stdoutLines.dropFirst().allSatisfy { $0.hasPrefix("pruned ") }, "\(pulled)")
        #expect(pulled.stderrLines.allSatisfy { $0.hasPrefix("warning: ") }, "\(pulled)")
        #expect(pulled.stderrLines.contains { $0.contains(second) }, "no warning about the truncated bundle: \(pulled)")
        #expect(pulled.stderrLines.contains { $0.contains(foreign) }, "no warning about the foreign file: \(pulled)")
        #expect(
            pulled.stderrLines.contains { $0.contains(".tmp-xyz") }, "no warning about the temporary file: \(pulled)")
        #expect(try b.tables()["items"]?.rows.map { $0[0] } == [.text("a-1"), .text("c-1")])

        try full.write(to: URL(fileURLWithPath: second))
        let retried = try await b.sync("pull", "--from", exchange.path)
        #expect(retried.exitCode == 0, "\(retried)")
        #expect(retried.stdoutLines.first == "pulled 1 bundles: 1 transactions, 1 changes", "\(retried)")
        #expect(retried.stdoutLines.dropFirst().allSatisfy { $0.hasPrefix("pruned ") }, "\(retried)")
        #expect(try b.tables()["items"]?.rows.map { $0[0] } == [.text("a-1"), .text("a-2"), .text("c-1")])
    }

    /// A named pipe under a file name of the protocol, in a peer's folder or the replica's own,
    /// is junk like any other file that is not one: opening it for reading would wait for a writer
    /// that never comes. Each command is bounded by `timeout`, so a hang fails the test.
    @Test func aNamedPipeInTheFolderIsReportedAndStopsNothing() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await CLIStore.trustEachOther([(a, "a"), (b, "b")])
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        let aFolder = exchange.path + "/" + (try await a.id()).description
        let bounded = { (store: CLIStore, command: String, flag: String) in
            try await CommandRunner.run(
                "/usr/bin/timeout", ["60", SyncProcess.path, command, "--store", store.path, flag, exchange.path],
                environment: SyncProcess.environment())
        }
        for name in ["0000000009.tmb", "watermark.tmw", "snapshot.tms"] {
            let pipe = aFolder + "/" + name
            #expect(mkfifo(pipe, 0o644) == 0)
            let pulled = try await bounded(b, "pull", "--from")
            #expect(pulled.exitCode == 0, "\(name): \(pulled)")
            // A peer's snapshot that cannot be read is passed over without a warning.
            if name != "snapshot.tms" {
                #expect(
                    pulled.stderrLines.contains { $0.contains(pipe) && $0.contains("not a regular file") },
                    "\(name): \(pulled)")
            }
            let pushed = try await bounded(a, "push", "--to")
            #expect(pushed.exitCode == 0, "\(name): \(pushed)")
            try FileManager.default.removeItem(atPath: pipe)
        }
        #expect(try b.tables()["items"]?.rows.map { $0[0] } == [.text("a-1")])
    }

    /// A sync tool's conflict copy in a replica's folder: peers warn once, its owner removes it.
    /// Two replicas that trust each other, and an exchange folder where `a` pushed one insert.
    static func pushedOnce() async throws -> (a: CLIStore, b: CLIStore, exchange: TemporaryDirectory) {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await CLIStore.trustEachOther([(a, "a"), (b, "b")])
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        _ = try await a.sync("push", "--to", exchange.path)
        return (a, b, exchange)
    }

    @Test func aConflictCopyIsReportedOnceAndRemovedByItsOwner() async throws {
        let (a, b, exchange) = try await Self.pushedOnce()
        let aFolder = exchange.path + "/" + (try await a.id()).description
        let copy = aFolder + "/0000000001 (1).tmb"
        try FileManager.default.copyItem(atPath: aFolder + "/0000000001.tmb", toPath: copy)

        let pulled = try await b.sync("pull", "--from", exchange.path, "--no-prune")
        #expect(pulled.exitCode == 0, "\(pulled)")
        #expect(
            pulled.stderrLines == [
                "warning: skipped \(copy): not a Tidemark exchange file; its replica removes it unless it needs it "
                    + "(said once while the file is unchanged)"
            ], "\(pulled)")
        let again = try await b.sync("pull", "--from", exchange.path, "--no-prune")
        #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again)")

        let pushed = try await a.sync("push", "--to", exchange.path)
        #expect(pushed.exitCode == 0 && pushed.stderr.isEmpty, "\(pushed)")
        #expect(
            pushed.stdoutLines == [
                "removed \(copy): a copy of what this replica's store holds", "nothing new to push",
            ], "\(pushed)")
        #expect(!FileManager.default.fileExists(atPath: copy))
    }

    /// Someone replaces a replica's own folder in the exchange with a symbolic link to the folder
    /// that holds its store: the push refuses, and deletes nothing there. A peer's folder that is a
    /// link is no replica's folder: a pull reads nothing through it and says nothing of its files.
    @Test func aReplicaFolderThatIsASymbolicLinkIsNeitherTidiedNorRead() async throws {
        let (a, b, exchange) = try await Self.pushedOnce()
        let aFolder = exchange.path + "/" + (try await a.id()).description
        try FileManager.default.removeItem(atPath: aFolder)
        try FileManager.default.createSymbolicLink(atPath: aFolder, withDestinationPath: a.directory.path)
        try "my notes".write(toFile: a.directory.file("notes.txt"), atomically: false, encoding: .utf8)
        let before = try FileManager.default.contentsOfDirectory(atPath: a.directory.path).sorted()

        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        let pushed = try await a.sync("push", "--to", exchange.path)
        #expect(pushed.exitCode == 1, "\(pushed)")
        #expect(
            pushed.stderrLines.first
                == "error: cannot write \(aFolder): it is a symbolic link, not a replica's folder; "
                + "remove the link (a push makes the folder again)", "\(pushed)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: a.directory.path).sorted() == before)
        #expect(try await a.sync("status").exitCode == 0)

        let pulled = try await b.sync("pull", "--from", exchange.path, "--no-prune")
        #expect(pulled.exitCode == 0 && pulled.stderr.isEmpty, "\(pulled)")
        #expect(pulled.stdoutLines.first == "pulled 0 bundles: 0 transactions, 0 changes", "\(pulled)")
    }

    /// A file that is no exchange file's copy, left in a replica's own folder, is someone's: its
    /// owner keeps it and says so once, and peers say once that it is left alone.
    @Test func aFileOfAnotherKindInAReplicasFolderIsKept() async throws {
        let (a, b, exchange) = try await Self.pushedOnce()
        let notes = exchange.path + "/" + (try await a.id()).description + "/notes.txt"
        try "my notes".write(toFile: notes, atomically: false, encoding: .utf8)

        let pulled = try await b.sync("pull", "--from", exchange.path, "--no-prune")
        #expect(
            pulled.stderrLines == [
                "warning: skipped \(notes): not a Tidemark exchange file; left alone (said once while the file is unchanged)"
            ], "\(pulled)")
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        let pushed = try await a.sync("push", "--to", exchange.path)
        #expect(pushed.exitCode == 0, "\(pushed)")
        #expect(
            pushed.stderrLines == [
                "warning: \(notes): kept: not an exchange file, and Tidemark removes only what it wrote"
            ], "\(pushed)")
        try await a.exec("INSERT INTO items(id) VALUES ('a-3')")
        let again = try await a.sync("push", "--to", exchange.path)
        #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again)")
        #expect(try String(contentsOfFile: notes, encoding: .utf8) == "my notes")
    }

    /// A pull that applies bundles and then cannot write its watermark says what it applied
    /// before the error, and exits 1; pulling again once the cause is gone applies nothing twice.
    @Test func aPullThatFailsAfterApplyingSaysWhatItApplied() async throws {
        let (_, b, exchange) = try await Self.pushedOnce()
        // b's own folder cannot be made: a file stands where it goes.
        let bFolder = exchange.path + "/" + (try await b.id()).description
        try "in the way".write(toFile: bFolder, atomically: false, encoding: .utf8)

        let pulled = try await b.sync("pull", "--from", exchange.path)
        #expect(pulled.exitCode == 1, "\(pulled)")
        #expect(pulled.stdoutLines == ["pulled 1 bundles: 1 transactions, 1 changes"], "\(pulled)")
        #expect(pulled.stderrLines.first?.hasPrefix("error: cannot write \(bFolder)") == true, "\(pulled)")
        #expect(try await b.exec("SELECT id FROM items").stdoutLines.contains("a-1"))

        try FileManager.default.removeItem(atPath: bFolder)
        let again = try await b.sync("pull", "--from", exchange.path)
        #expect(again.exitCode == 0, "\(again)")
        #expect(again.stdoutLines.first == "pulled 0 bundles: 0 transactions, 0 changes", "\(again)")
    }

    @Test func aPullLeavesAWatermarkThatInspectDecodes() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await b.trust(a, as: "a")
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        _ = try await a.sync("push", "--to", exchange.path)
        #expect(try await b.sync("pull", "--from", exchange.path).exitCode == 0)
        let watermark = exchange.path + "/" + (try await b.id()).description + "/watermark.tmw"
        #expect(FileManager.default.fileExists(atPath: watermark))

        let json = try await SyncProcess.run(["inspect", "--json", watermark])
        #expect(json.exitCode == 0 && json.stderr.isEmpty, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "watermark")
        #expect((object["sender"] as? [String: String])?["name"] == "b")
        #expect(object["signature"] as? String == "valid")
        #expect(object["through"] as? String == (try await b.token()))
        #expect(object["transaction_count"] as? Int == 0)
        let text = try await SyncProcess.run(["inspect", watermark])
        #expect(text.stdoutLines.first == "bundle     watermark, format 1, 0 transactions, 0 changes", "\(text)")
    }
}
