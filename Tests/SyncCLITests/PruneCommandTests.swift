import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync prune`, `peers retire`, `pull --no-prune`, `init --from` and expired `--since` tokens, run
/// as the built binary: exact output, exit codes, and stores unchanged where nothing should change.
@Suite struct PruneCommandTests {
    /// Stores made by `sync init` that trust each other and share one exchange folder.
    struct Group {
        let stores: [String: CLIStore]
        let exchange: TemporaryDirectory
        var folder: String { exchange.path }

        init(_ names: [String]) async throws {
            var stores: [String: CLIStore] = [:]
            for name in names { stores[name] = try await CLIStore(replica: name) }
            for name in names {
                for other in names where other != name { try await stores[name]!.trust(stores[other]!, as: other) }
            }
            self.stores = stores
            exchange = try TemporaryDirectory("tidemark-cli-exchange")
        }

        subscript(name: String) -> CLIStore { stores[name]! }

        /// `sync push`; requires success.
        @discardableResult
        func push(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> CommandResult {
            let result = try await self[name].sync("push", "--to", folder)
            try #require(
                result.exitCode == 0 && result.stderr.isEmpty, "\(name): \(result)", sourceLocation: sourceLocation)
            return result
        }

        /// `sync pull` (with `--no-prune` when `prune` is false); requires success without warnings.
        @discardableResult
        func pull(_ name: String, prune: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) async throws
            -> CommandResult
        {
            let result = try await SyncProcess.run(
                ["pull", "--store", self[name].path, "--from", folder] + (prune ? [] : ["--no-prune"]))
            try #require(
                result.exitCode == 0 && result.stderr.isEmpty, "\(name): \(result)", sourceLocation: sourceLocation)
            return result
        }

        /// Each of `names` pushes, then each pulls.
        func round(_ names: [String], prune: Bool = true) async throws {
            for name in names { try await push(name) }
            for name in names { try await pull(name, prune: prune) }
        }

        /// The bundle file `name` pushed as number `number`, under the folder's absolute path.
        func bundle(of name: String, _ number: Int) async throws -> String {
            try await subfolder(of: name) + "/" + String(format: "%010d.tmb", number)
        }

        /// A store's subfolder, as the store remembers the folder (absolute, standardized).
        func subfolder(of name: String) async throws -> String {
            URL(fileURLWithPath: folder).standardizedFileURL.path + "/" + (try await self[name].id()).description
        }

        /// Every pair of stores holds the same tracked tables.
        func expectConverged(_ names: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let first = try self[names[0]].tables()
            for name in names.dropFirst() {
                let differences = first.differences(from: try self[name].tables(), mine: names[0], theirs: name)
                #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))", sourceLocation: sourceLocation)
            }
        }
    }

    static let heldBackHint = "(retire a member that stopped syncing with `sync peers retire NAME`)"

    /// The members of `store` as `status --json` lists them, by name.
    static func members(_ store: CLIStore) async throws -> [String: [String: Any]] {
        let list = try #require(try await store.status()["members"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: list.map { ($0["name"] as? String ?? "?", $0) })
    }

    @Test func pruneNamesTheSilentMemberUntilItIsRetiredAndItCatchesUpBySnapshotOnReturn() async throws {
        let group = try await Group(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        for name in ["a", "b", "c"] {
            try await group[name].exec(
                "INSERT INTO items(id, name, qty) VALUES ('\(name)-1', 'one', 1), ('\(name)-2', 'two', 2)")
        }
        try await group.round(["a", "b", "c"])
        try await group.round(["a", "b", "c"])
        let cHolds = try await c.token()

        // c stops syncing; a and b go on.
        try await a.exec("UPDATE items SET name = 'renamed while c was away' WHERE id = 'c-1'")
        try await b.exec("DELETE FROM items WHERE id = 'c-2'")
        try await group.round(["a", "b"])
        try await group.round(["a", "b"])

        let held = try await a.sync("prune")
        #expect(held.exitCode == 0 && held.stderr.isEmpty, "\(held)")
        #expect(
            held.stdoutLines == [
                "horizon  \(cHolds)", "removed 0 history transactions, 0 exchange files",
                "held back by: c \(Self.heldBackHint)",
            ], "\(held)")
        let before = try await Self.members(a)
        #expect(before["c"]?["retired"] as? Bool == false)
        #expect((before["c"]?["behind"] as? [String: Any])?["transactions"] as? Int == 2, "\(before)")
        // The values c lacks: the update's key and name ('c-1', 'renamed while c was away'), the
        // delete's key and kept name ('c-2', 'two').
        #expect((before["c"]?["behind"] as? [String: Any])?["bytes"] as? Int == 3 + 24 + 3 + 3, "\(before)")
        let status = try await a.sync("status")
        #expect(
            status.stdoutLines.contains {
                $0.hasPrefix("member   c: lacks 2 transactions (2 changes, 33 bytes) since ")
            },
            "\(status)")

        // Retiring it is a write that travels; a no longer waits for c.
        let retired = try await a.peers("retire", "c")
        #expect(retired.exitCode == 0 && retired.stdout.isEmpty && retired.stderr.isEmpty, "\(retired)")
        expectFailure(try await a.peers("retire", "nobody"), "no peer named 'nobody'")
        let keyC = try await c.publicKey()
        #expect(try await a.peers("list").stdoutLines.contains("c \(keyC) (retired)"))
        #expect(try await Self.members(a)["c"]?["retired"] as? Bool == true)
        try await group.round(["a", "b"])
        try await group.round(["a", "b"])
        #expect(try await Self.members(b)["c"]?["retired"] as? Bool == true)
        for name in ["a", "b"] {
            let pruned = try await group[name].sync("prune")
            #expect(pruned.exitCode == 0 && pruned.stderr.isEmpty, "\(pruned)")
            #expect(!pruned.stdout.contains("held back by"), "\(name): \(pruned)")
            // A plain log lists what remains: nothing.
            let log = try await group[name].sync("log")
            #expect(log.exitCode == 0 && log.stdout.isEmpty && log.stderr.isEmpty, "\(name): \(log)")
        }

        // Away, c writes through the CLI and through the sqlite3 shell; then it comes back.
        try await c.exec("INSERT INTO items(id, name) VALUES ('c-away', 'written away')")
        try await SQLiteShell.execute(c.path, "UPDATE items SET qty = 42 WHERE id = 'a-2'")
        let back = try await group.pull("c")
        let caughtUp = back.stdoutLines.filter { $0.hasPrefix("caught up from ") }
        #expect(caughtUp.count == 1, "\(back)")
        #expect(
            caughtUp.first?.range(of: "^caught up from (a|b)'s snapshot: [0-9]+ rows$", options: .regularExpression)
                != nil, "\(back)")
        try await group.push("c")
        try await group.round(["a", "b", "c"])
        try await group.round(["a", "b", "c"])
        try group.expectConverged(["a", "b", "c"])
        for name in ["a", "b", "c"] {
            let items = try #require(try group[name].tables()["items"])
            #expect(items.rows.contains { $0[0] == .text("c-away") }, "\(name)")
            #expect(items.rows.first { $0[0] == .text("a-2") }?[2] == .integer(42), "\(name)")
            #expect(items.rows.first { $0[0] == .text("c-1") }?[1] == .text("renamed while c was away"), "\(name)")
            #expect(!items.rows.contains { $0[0] == .text("c-2") }, "\(name)")
            let members = try await Self.members(group[name])
            #expect(members.values.allSatisfy { $0["retired"] as? Bool == false }, "\(name): \(members)")
            #expect(!(try await group[name].peers("list").stdout.contains("(retired)")), "\(name)")
        }
    }

    @Test func expiredTokensFailWithOneErrorLineAndAHintWhilePushAndPullGoOn() async throws {
        let group = try await Group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        let early = try await a.token()
        try await a.exec("UPDATE items SET qty = 2 WHERE id = 'a-1'")
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-2', 'two')")
        try await group.round(["a", "b"])
        let second = try await group.pull("a")
        #expect(second.stdoutLines.contains { $0.hasPrefix("pruned 3 history transactions") }, "\(second)")

        let aShort = try await a.id().short
        let message =
            "history token expired: replica \(aShort)'s transactions up to #3 were deleted from this store's history"
        let hint =
            "read the history that remains without --since (`sync log`), or run `sync watch` again to follow it from now"
        for token in [early, History.Token.zero.description] {
            let log = try await a.sync("log", "--since", token)
            expectFailure(log, message, hint: hint)
            #expect(log.errorLines == ["error: " + message], "\(log)")
            // An export for a peer behind the horizon writes a snapshot instead, and says so.
            let out = a.directory.file("expired.tmb")
            let export = try await a.sync("export", "--since", token, "--out", out)
            #expect(export.exitCode == 0 && export.stderr.isEmpty, "\(export)")
            #expect(export.stdoutLines.first?.hasPrefix("exported a snapshot of ") == true, "\(export)")
            #expect(export.stdout.contains("no longer has the history since that token"), "\(export)")
            let imported = try await b.sync("import", out)
            #expect(imported.exitCode == 0, "\(imported)")
        }
        // Without --since: what remains (nothing), in both forms; the current token still works.
        let log = try await a.sync("log")
        #expect(log.exitCode == 0 && log.stdout.isEmpty && log.stderr.isEmpty, "\(log)")
        #expect(try await a.log().isEmpty)
        #expect(try await a.log("--since", try await a.token()).isEmpty)
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-3', 'three')", author: "later")
        let remaining = try await a.log()
        #expect(remaining.count == 1, "\(remaining)")
        let text = try await a.sync("log")
        #expect(text.stdoutLines.first?.hasPrefix("a #4  ") == true, "\(text)")

        // Push and pull never show an active member an expired token.
        try await b.exec("INSERT INTO items(id, name) VALUES ('b-1', 'from b')")
        for _ in 0..<2 {
            for name in ["a", "b"] {
                try await group.push(name)
                let pulled = try await group.pull(name)
                #expect(!pulled.stdout.contains("expired"), "\(pulled)")
            }
        }
        try group.expectConverged(["a", "b"])
    }

    /// Ordinary use by three active members: a writes between its push and its pull (so the
    /// snapshot its automatic prune leaves holds a write it has not pushed), b pulls in between,
    /// then a pushes again. b's next push must work: push never shows an active member an
    /// expired token.
    @Test func pushNeverShowsAnActiveMemberAnExpiredToken() async throws {
        let group = try await Group(["a", "b", "c"])
        let (a, b) = (group["a"], group["b"])
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try await group.round(["a", "b", "c"])
        try await group.round(["a", "b", "c"])
        try await a.exec("INSERT INTO items(id, name) VALUES ('w1', 'pushed')")
        try await group.push("a")
        try await group.pull("b")
        try await group.pull("c")
        try await a.exec("INSERT INTO items(id, name) VALUES ('w2', 'written before the pull that prunes')")
        let pruning = try await group.pull("a")
        #expect(pruning.stdoutLines.contains { $0.hasPrefix("pruned ") }, "\(pruning)")
        try await group.pull("b")
        try await a.exec("INSERT INTO items(id, name) VALUES ('w3', 'after the prune')")
        try await b.exec("INSERT INTO items(id, name) VALUES ('b-1', 'from b')")

        let pushed = try await b.sync("push", "--to", group.folder)
        #expect(pushed.exitCode == 0 && pushed.stderr.isEmpty, "\(pushed)")
        #expect(pushed.stdoutLines.first?.hasPrefix("pushed ") == true, "\(pushed)")
        try await group.round(["a", "b", "c"])
        try await group.round(["a", "b", "c"])
        try group.expectConverged(["a", "b", "c"])
    }

    @Test func dryRunChangesNothingAndSaysWhatItWouldRemove() async throws {
        let group = try await Group(["a", "b"])
        let a = group["a"]
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try await a.exec("DELETE FROM items WHERE id = 'a-1'")
        try await group.push("a")
        try await group.pull("b", prune: false)
        try await group.pull("a", prune: false)
        let token = try await a.token()
        let bundle = try await group.bundle(of: "a", 1)
        #expect(FileManager.default.fileExists(atPath: bundle))

        /// `status --json`'s count of tombstones.
        func tombstones() async throws -> Int? {
            let status = try await a.sync("status", "--json")
            let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            return object?["tombstones"] as? Int
        }
        #expect(try await tombstones() == 1)
        let dump = try await a.dump()
        let tree = FolderTree(group.folder)
        let dry = try await a.sync("prune", "--dry-run")
        #expect(dry.exitCode == 0 && dry.stderr.isEmpty, "\(dry)")
        #expect(
            dry.stdoutLines == [
                "horizon  \(token)", "would remove 2 history transactions, 1 exchange files", "  \(bundle)",
                "would write snapshot \(try await group.subfolder(of: "a"))/snapshot.tms",
            ], "\(dry)")
        #expect(try await a.dump() == dump, "a dry run changed the store")
        #expect(FolderTree(group.folder) == tree, "a dry run changed the folder")

        let real = try await a.sync("prune")
        #expect(real.exitCode == 0 && real.stderr.isEmpty, "\(real)")
        #expect(
            real.stdoutLines == [
                "horizon  \(token)", "removed 2 history transactions, 1 exchange files", "  \(bundle)",
                "wrote snapshot \(try await group.subfolder(of: "a"))/snapshot.tms",
            ], "\(real)")
        #expect(!FileManager.default.fileExists(atPath: bundle))
        #expect(try await a.log().isEmpty)
        // b applied the delete and a holds all b held: the tombstone went with the history.
        #expect(try await tombstones() == 0)
    }

    @Test func maxLagRetiresMembersWhoseLastWatermarkIsOlder() async throws {
        let group = try await Group(["a", "b"])
        let a = group["a"]
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try await group.push("a")
        try await group.pull("b", prune: false)
        try await group.pull("a", prune: false)
        try await Task.sleep(for: .milliseconds(1_500))

        let dump = try await a.dump()
        let invalid = try await a.sync("prune", "--max-lag", "soon")
        expectFailure(invalid, "invalid --max-lag 'soon': use a number and a unit: s, m, h, d or w (e.g. 30d)")
        let patient = try await a.sync("prune", "--max-lag", "1h", "--dry-run")
        #expect(patient.exitCode == 0 && !patient.stdout.contains("retire"), "\(patient)")
        let dry = try await a.sync("prune", "--max-lag", "1s", "--dry-run")
        #expect(dry.exitCode == 0 && dry.stderr.isEmpty, "\(dry)")
        #expect(dry.stdoutLines.first == "would retire b (no watermark within 1s)", "\(dry)")
        #expect(!dry.stdout.contains("held back by"), "\(dry)")
        #expect(try await a.dump() == dump)

        let real = try await a.sync("prune", "--max-lag", "1s")
        #expect(real.exitCode == 0 && real.stderr.isEmpty, "\(real)")
        #expect(real.stdoutLines.first == "retired b (no watermark within 1s)", "\(real)")
        #expect(try await Self.members(a)["b"]?["retired"] as? Bool == true)
        #expect(try await a.peers("list").stdoutLines == ["b \(try await group["b"].publicKey()) (retired)"])
        let again = try await a.sync("prune", "--max-lag", "1s")
        #expect(!again.stdout.contains("retired b"), "already retired: \(again)")
    }

    @Test func pullWithNoPruneKeepsHistoryAndAPlainPullPrunes() async throws {
        let group = try await Group(["a", "b"])
        let a = group["a"]
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try await a.exec("UPDATE items SET qty = 1 WHERE id = 'a-1'")
        try await group.push("a")
        try await group.pull("b")
        let kept = try await group.pull("a", prune: false)
        #expect(kept.stdoutLines == ["pulled 0 bundles: 0 transactions, 0 changes"], "\(kept)")
        #expect(try await a.log().count == 2)
        let pruned = try await group.pull("a")
        #expect(
            pruned.stdoutLines == [
                "pulled 0 bundles: 0 transactions, 0 changes", "pruned 2 history transactions, 1 exchange files",
                "wrote snapshot \(try await group.subfolder(of: "a"))/snapshot.tms",
            ], "\(pruned)")
        #expect(try await a.log().isEmpty)
    }

    @Test func initFromASnapshotTrustsItsSenderAndConverges() async throws {
        let group = try await Group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        try await a.exec(
            "INSERT INTO items(id, name, qty) VALUES ('a-1', 'one', 1), ('a-2', 'two', 2); INSERT INTO tags VALUES ('a-1', 'x', 1)"
        )
        try await b.exec("INSERT INTO items(id, name) VALUES ('b-1', 'bee'); DELETE FROM items WHERE id = 'b-1'")
        try await group.round(["a", "b"])
        try await group.round(["a", "b"])
        // b's pull pruned first; its snapshot holds what a's prune removed, so a wrote none.
        let snapshot = try await group.subfolder(of: "b") + "/snapshot.tms"
        #expect(FileManager.default.fileExists(atPath: snapshot))
        #expect(!FileManager.default.fileExists(atPath: try await group.subfolder(of: "a") + "/snapshot.tms"))
        // The app's live rows: a's two items and one tag (b's item was deleted).
        let states = try a.tables().tables.map(\.rows.count).reduce(0, +)
        #expect(states == 3)

        let directory = try TemporaryDirectory("tidemark-cli-join")
        let path = directory.file("d.db")
        let joined = try await SyncProcess.run([
            "init", "--store", path, "--replica", "d", "--schema", a.schemaFile, "--preserve", "items.name", "--from",
            snapshot,
        ])
        #expect(joined.exitCode == 0 && joined.stderr.isEmpty, "\(joined)")
        let keyB = try await b.publicKey()
        let d = try TestReplica(opening: path)
        #expect(
            joined.stdoutLines == [
                "d \(d.id)", "trusted b \(keyB) (the sender of \(snapshot))",
                "imported \(states) rows from its snapshot",
            ], "\(joined)")
        let peers = try await SyncProcess.run(["peers", "list", "--store", path])
        #expect(peers.stdoutLines == ["b \(keyB)"])
        let differences = try d.tables().differences(from: try a.tables(), mine: "d", theirs: "a")
        #expect(differences.isEmpty, "\(differences)")

        // Introduced to a (and trusted by both), d syncs through the folder like any member.
        #expect(
            try await SyncProcess.run(["peers", "add", "--store", path, "a", try await a.publicKey()]).exitCode == 0)
        for store in [a, b] { #expect(try await store.peers("add", "d", d.publicKeyBase64).exitCode == 0) }
        #expect(
            try await SyncProcess.run(["exec", "--store", path, "INSERT INTO items(id, name) VALUES ('d-1', 'from d')"])
                .exitCode == 0)
        for _ in 0..<2 {
            for arguments in [["push", "--to"], ["pull", "--from"]] {
                let result = try await SyncProcess.run([arguments[0], "--store", path, arguments[1], group.folder])
                #expect(result.exitCode == 0 && result.stderr.isEmpty, "\(result)")
            }
            try await group.round(["a", "b"])
        }
        try group.expectConverged(["a", "b"])
        let final = try d.tables().differences(from: try a.tables(), mine: "d", theirs: "a")
        #expect(final.isEmpty, "\(final)")
        #expect(try a.tables()["items"]?.rows.contains { $0[0] == .text("d-1") } == true)
    }
}
