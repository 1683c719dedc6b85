import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync identity`, `peers`, `export` and `import`, run as the built
/// binary: exact output, exit codes, one `error:` line on failure, and stores unchanged by refusals.
@Suite struct ExchangeCommandTests {
    // MARK: - Identity and peers

    @Test func identityPrintsTheNameAndThePublicKey() async throws {
        let a = try await CLIStore(replica: "a")
        let result = try await a.sync("identity")
        #expect(result.exitCode == 0 && result.stderr.isEmpty, "\(result)")
        let key = try KeyFile.load(a.path + ".key")
        #expect(result.stdoutLines == ["a \(Data(key.publicKey).base64EncodedString())"])
    }

    @Test func peersAreAddedListedAndRemoved() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        let c = try await CLIStore(replica: "c")
        let (keyB, keyC) = (try await b.publicKey(), try await c.publicKey())

        for (name, key) in [("b", keyB), ("c", keyC), ("b", keyB)] {
            let added = try await a.peers("add", name, key)
            #expect(added.exitCode == 0 && added.stdout.isEmpty && added.stderr.isEmpty, "\(added)")
        }
        #expect(try await a.peers("list").stdoutLines == ["b \(keyB)", "c \(keyC)"])
        let json = try await a.peers("list", "--json")
        let peers = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json)")
        #expect(peers.map { $0["name"] as? String } == ["b", "c"])
        #expect(peers.map { $0["public_key"] as? String } == [keyB, keyC])
        #expect(peers.first?["id"] as? String == Replica.ID(publicKey: [UInt8](Data(base64Encoded: keyB)!)).description)

        let before = try await a.dump()
        expectFailure(try await a.peers("add", "b", keyC), "that key is already trusted as 'c'")
        expectFailure(try await a.peers("add", "bee", keyB), "that key is already trusted as 'b'")
        expectFailure(try await a.peers("add", "a", try await a.publicKey()), "that is this replica's own key")
        expectFailure(try await a.peers("add", "x", "bm90IGEga2V5"), "invalid public key")
        // The whole line `sync identity` prints, pasted as one argument.
        expectFailure(
            try await a.peers("add", "b", "b \(keyB)"), "that is a name and a public key",
            hint: "KEY the second word of what `sync identity` prints")
        expectFailure(try await a.peers("add", "bad name", keyB), "invalid peer name 'bad name'")
        #expect(try await a.dump() == before)

        let removed = try await a.peers("remove", "b")
        #expect(removed.exitCode == 0 && removed.stdout.isEmpty && removed.stderr.isEmpty, "\(removed)")
        #expect(try await a.peers("list").stdoutLines == ["c \(keyC)"])
        expectFailure(try await a.peers("remove", "b"), "no peer named 'b'")
    }

    // MARK: - Export and import

    @Test func exportAndImportCarryEveryWrite() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await b.trust(a, as: "a")
        try await a.trust(b, as: "b")
        try await a.exec(
            "INSERT INTO items(id, name, qty, price, photo) VALUES ('a-1', 'Äpfel', 3, 0.5, x'00ff'), ('a-2', 'Birnen', 1, NULL, NULL)",
            author: "me")
        try await a.exec(
            "INSERT INTO tags VALUES ('a-1', 'fruit', 1), ('a-2', 'fruit', 2); UPDATE items SET qty = 4 WHERE id = 'a-1'"
        )
        try await SQLiteShell.execute(
            a.path, "DELETE FROM tags WHERE item = 'a-2'; UPDATE items SET note = 'shell' WHERE id = 'a-2'")

        let bundle = a.directory.file("for-b.tmb")
        let exported = try await a.sync("export", "--peer", "b", "--out", bundle)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: bundle)[.size] as? Int)
        #expect(exported.exitCode == 0 && exported.stderr.isEmpty, "\(exported)")
        #expect(exported.stdoutLines == ["exported 3 transactions, 7 changes, \(size) bytes to \(bundle)"])

        let imported = try await b.sync("import", bundle)
        #expect(imported.exitCode == 0 && imported.stderr.isEmpty, "\(imported)")
        #expect(imported.stdoutLines == ["\(bundle): applied 3 transactions, 7 changes from a"])
        try a.expectSameTables(as: b)

        let before = try await b.dump()
        let again = try await b.sync("import", bundle)
        #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again)")
        #expect(again.stdoutLines == ["\(bundle): already applied, nothing changed"])
        #expect(try await b.dump() == before)

        // --since: only what that token lacks; several files are applied in the order given.
        let token = try await b.token()
        try await a.exec("DELETE FROM items WHERE id = 'a-1'")
        let next = a.directory.file("next.tmb")
        #expect(
            try await a.sync("export", "--since", token, "--out", next).stdoutLines.first?.hasPrefix(
                "exported 1 transactions, 1 changes, ") == true)
        let c = try await CLIStore(replica: "c")
        try await c.trust(a, as: "a")
        let both = try await c.sync("import", bundle, next)
        #expect(both.exitCode == 0 && both.stderr.isEmpty, "\(both)")
        #expect(
            both.stdoutLines == [
                "\(bundle): applied 3 transactions, 7 changes from a",
                "\(next): applied 1 transactions, 1 changes from a",
            ])
        try a.expectSameTables(as: c)
    }

    /// Files given in another order than they need are applied all the same, and a damaged one
    /// does not stop the others: the command fails at the end, naming what it did not apply.
    @Test func importAppliesFilesInTheOrderTheyNeedAndNamesThoseItCouldNot() async throws {
        let a = try await CLIStore(replica: "a")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let first = a.directory.file("first.tmb")
        #expect(try await a.sync("export", "--since", History.Token.zero.description, "--out", first).exitCode == 0)
        let token = try await a.token()
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        let second = a.directory.file("second.tmb")
        #expect(try await a.sync("export", "--since", token, "--out", second).exitCode == 0)
        let damaged = a.directory.file("damaged.tmb")
        try Data("not a bundle".utf8).write(to: URL(fileURLWithPath: damaged))

        let b = try await CLIStore(replica: "b")
        try await b.trust(a, as: "a")
        let reversed = try await b.sync("import", second, first)
        #expect(reversed.exitCode == 0 && reversed.stderr.isEmpty, "\(reversed)")
        #expect(
            reversed.stdoutLines == [
                "\(first): applied 1 transactions, 1 changes from a",
                "\(second): applied 1 transactions, 1 changes from a",
            ])
        try a.expectSameTables(as: b)

        let c = try await CLIStore(replica: "c")
        try await c.trust(a, as: "a")
        let mixed = try await c.sync("import", damaged, second, first)
        #expect(mixed.exitCode != 0, "\(mixed)")
        #expect(mixed.stdoutLines.count == 2, "\(mixed)")
        #expect(mixed.errorLines == ["error: \(damaged): not a Tidemark bundle (bad magic) at byte 0"], "\(mixed)")
        try a.expectSameTables(as: c)

        let d = try await CLIStore(replica: "d")
        try await d.trust(a, as: "a")
        let stuck = try await d.sync("import", damaged, second)
        #expect(
            stuck.errorLines == [
                "error: \(damaged): not a Tidemark bundle (bad magic) at byte 0 (and 1 more not applied: \(second))"
            ], "\(stuck)")
        #expect(stuck.stdout.isEmpty && stuck.hintLines.count == 1, "\(stuck)")
    }

    /// `--peer` exports what the peer is not known to hold: after `a`'s bundle, `b` knows `a` holds
    /// all of it, so `b`'s export for `a` is empty.
    @Test func exportForAPeerLeavesOutWhatThePeerIsKnownToHold() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.trust(b, as: "b")
        try await b.trust(a, as: "a")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let ab = a.directory.file("ab.tmb")
        _ = try await a.sync("export", "--peer", "b", "--out", ab)
        _ = try await b.sync("import", ab)
        let ba = b.directory.file("ba.tmb")
        let exported = try await b.sync("export", "--peer", "a", "--out", ba)
        #expect(exported.stdoutLines.first?.hasPrefix("exported 0 transactions, 0 changes, ") == true, "\(exported)")
        #expect(try await a.sync("import", ba).stdoutLines == ["\(ba): already applied, nothing changed"])
    }

    /// `--out` naming the store itself, or any file that is not a bundle, is refused with nothing
    /// written; an earlier export under the same name is replaced.
    @Test func exportNeverWritesOverAFileThatIsNotABundle() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.trust(b, as: "b")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let before = try await a.dump()
        let notes = a.directory.file("notes.txt")
        try "my notes".write(toFile: notes, atomically: false, encoding: .utf8)
        for target in [a.path, notes, a.path + ".key"] {
            expectFailure(
                try await a.sync("export", "--peer", "b", "--out", target),
                "cannot write \(target): a file that is not a bundle is there, and an export replaces only an earlier one: "
                    + "remove it or choose another name")
        }
        #expect(try await a.dump() == before)
        #expect(try String(contentsOfFile: notes, encoding: .utf8) == "my notes")
        let out = a.directory.file("ab.tmb")
        for _ in 0..<2 {
            let exported = try await a.sync("export", "--peer", "b", "--out", out)
            #expect(exported.exitCode == 0, "\(exported)")
        }
    }

    @Test func exportNeedsExactlyOneOfSinceOrPeer() async throws {
        let a = try await CLIStore(replica: "a")
        let out = a.directory.file("x.tmb")
        expectFailure(try await a.sync("export", "--out", out), "give exactly one of --since TOKEN or --peer NAME")
        expectFailure(
            try await a.sync("export", "--since", History.Token.zero.description, "--peer", "b", "--out", out),
            "give exactly one of --since TOKEN or --peer NAME")
        expectFailure(
            try await a.sync("export", "--peer", "nobody", "--out", out), "no peer named 'nobody'",
            hint: "sync peers list")
        expectFailure(try await a.sync("export", "--since", "yesterday", "--out", out), "not a history token")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    // MARK: - Refusals

    @Test func anUnknownSignerIsRefusedWithTheCommandToTrustIt() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        try await b.exec("INSERT INTO items(id) VALUES ('b-1')")
        let bundle = try await a.exportAll()
        let key = try await a.publicKey()
        try await expectRefused(
            b, ["import", bundle], "\(bundle): signed by unknown replica 'a' (key \(key))",
            hint: "if you trust it: sync peers add NAME \(key)")
    }

    @Test func peersRemoveTakesEffectOnTheNextImport() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await b.trust(a, as: "a")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let first = try await a.exportAll("1.tmb")
        #expect(try await b.sync("import", first).exitCode == 0)
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        let second = try await a.exportAll("2.tmb")
        #expect(try await b.peers("remove", "a").exitCode == 0)
        try await expectRefused(b, ["import", second], "\(second): signed by unknown replica 'a'")
    }

    @Test func damagedFilesAndFilesThatAreNotBundlesAreRefused() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await b.trust(a, as: "a")
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try await b.exec("INSERT INTO items(id) VALUES ('b-1')")
        let bundle = try await a.exportAll()
        let bytes = try BundleBytes(contentsOf: bundle)
        let damagedHint = "the file is damaged, incomplete or not from Tidemark; ask its sender to export it again"

        let flipped = b.directory.file("flipped.tmb")
        try Data(bytes.flippingBit(2, at: bytes.bytes.count / 2)).write(to: URL(fileURLWithPath: flipped))
        try await expectRefused(b, ["import", flipped], "\(flipped): ", hint: damagedHint)

        let cut = b.directory.file("cut.tmb")
        try Data(bytes.bytes.prefix(bytes.bytes.count - 20)).write(to: URL(fileURLWithPath: cut))
        try await expectRefused(
            b, ["import", cut], "\(cut): the file ends early (truncated or still being copied)", hint: damagedHint)

        let text = b.directory.file("notes.txt")
        try "not a bundle\n".write(toFile: text, atomically: false, encoding: .utf8)
        try await expectRefused(
            b, ["import", text], "\(text): not a Tidemark bundle (bad magic) at byte 0", hint: damagedHint)

        let empty = b.directory.file("empty.tmb")
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        try await expectRefused(b, ["import", empty], "\(empty): not a Tidemark bundle (bad magic) at byte 0")

        try await expectRefused(b, ["import", a.path], "\(a.path): not a Tidemark bundle (bad magic) at byte 0")

        var version = bytes
        version.bytes[9] = 2
        try version.resign(with: try KeyFile.load(a.path + ".key"))
        let future = b.directory.file("v2.tmb")
        try version.write(to: future)
        try await expectRefused(
            b, ["import", future], "\(future): unsupported format version 2 (this build reads version 1) at byte 8")

        try await expectRefused(
            b, ["import", b.directory.file("missing.tmb")],
            "cannot read \(b.directory.file("missing.tmb")): no such file")
    }

    @Test func importingAFolderIsOneErrorLine() async throws {
        let b = try await CLIStore(replica: "b")
        try await expectRefused(b, ["import", b.directory.path], "cannot read \(b.directory.path): is a folder")
    }

    @Test func aBundleForAnotherSchemaIsRefused() async throws {
        let a = try await CLIStore(
            replica: "a", schema: "CREATE TABLE todos(id TEXT PRIMARY KEY, title TEXT);", extra: [])
        let b = try await CLIStore(replica: "b")
        try await b.trust(a, as: "a")
        try await a.exec("INSERT INTO todos VALUES ('t-1', 'Buy milk')")
        let bundle = try await a.exportAll()
        try await expectRefused(
            b, ["import", bundle], "\(bundle): bundle is for a different schema: table 'todos' is not tracked here",
            hint: "both replicas must track the same tables with the same columns")
    }

    @Test func bundlesImportedOutOfOrderNameTheMissingPrerequisites() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await b.trust(a, as: "a")
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        let folder = exchange.path + "/" + (try await a.id()).description
        let (first, second) = (folder + "/0000000001.tmb", folder + "/0000000002.tmb")

        try await expectRefused(
            b, ["import", second], "\(second): missing prerequisites: a #1",
            hint: "import the bundles it depends on first (pull applies them in order)")
        let both = try await b.sync("import", first, second)
        #expect(both.exitCode == 0 && both.stderr.isEmpty, "\(both)")
        #expect(
            both.stdoutLines == [
                "\(first): applied 1 transactions, 1 changes from a",
                "\(second): applied 1 transactions, 1 changes from a",
            ])
        try a.expectSameTables(as: b)
    }

    @Test func ownBundlesAreAlreadyApplied() async throws {
        let a = try await CLIStore(replica: "a")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let bundle = try await a.exportAll()
        let before = try await a.dump()
        let result = try await a.sync("import", bundle)
        #expect(result.exitCode == 0 && result.stderr.isEmpty, "\(result)")
        #expect(result.stdoutLines == ["\(bundle): already applied, nothing changed"])
        #expect(try await a.dump() == before, "the store changed though import said nothing changed")
    }

    @Test func aStoreRestoredFromAnOlderCopyRefusesItsNewerTransactions() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.trust(b, as: "b")
        try await b.trust(a, as: "a")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let old = a.directory.file("old.db")
        try await SQLiteShell.execute(a.path, ".backup '\(old)'")
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        let own = try await a.exportAll("own.tmb")
        #expect(try await b.sync("import", own).exitCode == 0)
        let relayed = try await b.exportAll("relayed.tmb")

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: a.path + suffix) }
        try FileManager.default.copyItem(atPath: old, toPath: a.path)
        for bundle in [relayed, own] {
            try await expectRefused(
                a, ["import", bundle],
                "\(bundle): holds this replica's transactions up to #2 but the store has only #1: the store was restored from an older copy",
                hint:
                    "continuing would reuse sequence numbers; move this store aside and create a new replica with `sync init`, then pull"
            )
        }
    }

    /// Through a folder: the pull that meets a peer's file holding this replica's newer
    /// transactions fails, and from then on the store publishes nothing, so a write made after the
    /// restore cannot go out under a sequence number peers hold with other content. Before, the
    /// pull only warned, and the next push published a second, different transaction `a #2`.
    @Test func aStoreRestoredFromAnOlderCopyStopsPublishingOnceAPullFindsOut() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await CLIStore.trustEachOther([(a, "a"), (b, "b")])
        let shared = try TemporaryDirectory("tidemark-cli-restored")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let old = a.directory.file("old.db")
        try await SQLiteShell.execute(a.path, ".backup '\(old)'")
        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        #expect(try await a.sync("push", "--to", shared.path).exitCode == 0)
        #expect(try await b.sync("pull", "--from", shared.path).exitCode == 0)
        #expect(try await b.sync("push", "--to", shared.path).exitCode == 0)

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: a.path + suffix) }
        try FileManager.default.copyItem(atPath: old, toPath: a.path)
        let pulled = try await a.sync("pull", "--from", shared.path)
        expectFailure(
            pulled, "the store was restored from an older copy",
            hint: "continuing would reuse sequence numbers; move this store aside")
        try await a.exec("INSERT INTO items(id) VALUES ('a-after')")
        let files = try FileManager.default.subpathsOfDirectory(atPath: shared.path).sorted()
        for command in [["push", "--to", shared.path], ["pull", "--from", shared.path]] {
            expectFailure(
                try await a.sync(command[0], command[1], command[2]), "the store was restored from an older copy",
                hint: "create a new replica")
        }
        expectFailure(
            try await a.sync("export", "--since", History.Token.zero.description, "--out", a.directory.file("x.tmb")),
            "the store was restored from an older copy")
        expectFailure(try await a.sync("prune"), "the store was restored from an older copy")
        expectFailure(try await a.sync("prune", "--dry-run"), "the store was restored from an older copy")
        #expect(try FileManager.default.subpathsOfDirectory(atPath: shared.path).sorted() == files, "nothing published")
        // status says so too, as the second line and in JSON.
        let status = try await a.sync("status")
        #expect(status.exitCode == 0, "\(status)")
        #expect(status.stdoutLines.dropFirst().first?.hasPrefix("restored ") == true, "\(status)")
        #expect(
            status.stdoutLines.dropFirst().first?.contains(
                "the store was restored from an older copy; push, pull, export and prune refuse it: move this store aside"
            )
                == true, "\(status)")
        let restored = try await a.status()["restored_from_older_copy"] as? String
        #expect(restored?.contains("the store was restored from an older copy") == true)
        #expect(try await b.status()["restored_from_older_copy"] is NSNull)
    }

    /// Files a command was given are named as given: an export's file in a folder that does not
    /// exist (not the temporary it writes first), a CA file that does not exist (not an exchange
    /// folder), and a key file that is not this replica's, which `identity` used to ignore.
    @Test func filesGivenOnTheCommandLineAreNamedAsGiven() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        let out = a.directory.file("missing/x.tmb")
        let exported = try await a.sync("export", "--since", History.Token.zero.description, "--out", out)
        expectFailure(exported, "cannot write \(out)")
        #expect(!exported.stderr.contains(".tmp-"), "\(exported)")
        let caFile = a.directory.file("nosuch.pem")
        expectFailure(
            try await a.sync("push", "--to", "https://127.0.0.1:9/x", "--ca-file", caFile),
            "cannot read \(caFile): no such file (the certificate authorities, --ca-file)")
        for arguments in [[String](), ["--age-recipient"]] {
            let result = try await SyncProcess.run(
                ["identity", "--store", a.path, "--key", b.path + ".key"] + arguments)
            #expect(result.exitCode != 0 && result.stdout.isEmpty, "\(result)")
        }
    }

    @Test func keyFilesAreNeverPrinted() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        try await b.exec("INSERT INTO items(id) VALUES ('b-1')")
        let keyPath = a.path + ".key"
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let damaged = a.directory.file("damaged.key")
        try String(pem.dropLast(30) + "!" + pem.suffix(29)).write(toFile: damaged, atomically: false, encoding: .utf8)
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")

        var failures: [(String, CommandResult)] = []
        for arguments in [
            ["import", "--store", b.path, keyPath], ["inspect", keyPath], ["inspect", "--json", keyPath],
            [
                "export", "--store", b.path, "--key", keyPath, "--since", History.Token.zero.description, "--out",
                b.directory.file("x.tmb"),
            ],
            ["push", "--store", b.path, "--key", keyPath, "--to", exchange.path],
            ["pull", "--store", b.path, "--key", keyPath, "--from", exchange.path],
            [
                "export", "--store", a.path, "--key", damaged, "--since", History.Token.zero.description, "--out",
                a.directory.file("y.tmb"),
            ],
            ["exec", "--store", keyPath, "SELECT 1"], ["status", "--store", keyPath],
            ["init", "--store", a.directory.file("new.db"), "--replica", "n", "--key", damaged],
        ] {
            let result = try await SyncProcess.run(arguments)
            #expect(result.exitCode != 0, "\(arguments): \(result)")
            #expect(result.errorLines.count == 1, "\(arguments): \(result)")
            failures.append((arguments.joined(separator: " "), result))
        }
        // Pasting the private key where a public key belongs must not echo it back either.
        failures.append(("peers add with the private key", try await b.peers("add", "oops", body)))
        for (command, result) in failures {
            let leaked = Self.secretFragments(body).filter { (result.stdout + result.stderr).contains($0) }
            #expect(leaked.isEmpty, "\(command) printed key material: \(result)")
        }
    }

    /// The seed part of a PEM key's base64 body in overlapping 12-character pieces, and the body.
    static func secretFragments(_ body: String) -> [String] {
        let characters = Array(body)
        // The first 22 characters encode the PKCS#8 prefix every Ed25519 key shares.
        return [body]
            + stride(from: 22, to: max(23, characters.count - 12), by: 4).map {
                String(characters[$0..<min(characters.count, $0 + 12)])
            }
    }

    // MARK: - Helpers

    /// Runs `sync ARGUMENTS…` against `store`, expects one error line containing `message` (and
    /// the hint, when given), and that the store's `.dump` is unchanged.
    func expectRefused(
        _ store: CLIStore, _ arguments: [String], _ message: String, hint: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let before = try await store.dump()
        let result = try await SyncProcess.run([arguments[0], "--store", store.path] + arguments.dropFirst())
        expectFailure(result, message, hint: hint, sourceLocation: sourceLocation)
        #expect(try await store.dump() == before, "the store changed: \(arguments)", sourceLocation: sourceLocation)
    }

}

extension CLIStore {
    /// Runs `sync peers SUBCOMMAND --store PATH ARGUMENTS…`.
    func peers(_ subcommand: String, _ arguments: String...) async throws -> CommandResult {
        try await SyncProcess.run(["peers", subcommand, "--store", path] + arguments)
    }

    /// The public key `sync identity` prints.
    func publicKey() async throws -> String {
        let result = try await sync("identity")
        try #require(result.exitCode == 0, "\(result)")
        return try #require(result.stdoutLines.first?.split(separator: " ").last.map(String.init))
    }

    /// The replica's identity.
    func id() async throws -> Replica.ID {
        Replica.ID(publicKey: [UInt8](try #require(Data(base64Encoded: try await publicKey()))))
    }

    /// `sync peers add NAME KEY` with `other`'s key; requires success.
    func trust(_ other: CLIStore, as name: String) async throws {
        let result = try await peers("add", name, try await other.publicKey())
        try #require(result.exitCode == 0, "\(result)")
    }

    /// Makes every store trust every other, each under its given name.
    static func trustEachOther(_ named: [(store: CLIStore, name: String)]) async throws {
        for (store, _) in named {
            for (other, name) in named where other.path != store.path { try await store.trust(other, as: name) }
        }
    }

    /// `sync export --since <zero token> --out DIR/NAME`; requires success and returns the path.
    func exportAll(_ name: String = "all.tmb") async throws -> String {
        let out = directory.file(name)
        let result = try await sync("export", "--since", History.Token.zero.description, "--out", out)
        try #require(result.exitCode == 0 && result.stderr.isEmpty, "\(result)")
        return out
    }

    /// The tracked tables, row by row.
    func tables() throws -> StoreSnapshot { try StoreSnapshot.trackedTables(of: path) }

    /// Expects this store's tracked tables to hold what `other`'s hold.
    func expectSameTables(as other: CLIStore, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let differences = try tables().differences(from: try other.tables(), mine: "first", theirs: "second")
        #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }
}
