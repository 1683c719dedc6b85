import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Snapshots: what a prune leaves behind so that members who come back, and replicas that join,
/// can catch up without the history it deleted (`exportSnapshot`, `join(from:)`, and `pull`'s
/// snapshot catch-up).
@Suite struct SnapshotCatchUpTests {
    /// Three replicas that wrote (inserts, updates, deletes), synced twice and pruned everything:
    /// the folder holds only the snapshot of the first prune (which holds what the others removed)
    /// and the watermarks.
    static func prunedGroup() throws -> ExchangeGroup {
        let group = try PruneTests.syncedTwice(count: 12)
        for name in group.names { try group.prune(name) }
        #expect(group.bundles.isEmpty)
        #expect(group.snapshots == [group.folder(of: group.names[0]) + "/snapshot.tms"])
        return group
    }

    @Test func aSnapshotCarriesEveryRowStateAndTombstoneExactly() throws {
        let group = try PruneTests.syncedTwice(count: 8)
        let a = group["a"]
        let file = group.directory.file("a.tms")
        let summary = try a.store.exportSnapshot(to: file, key: a.key)
        let header = try ExchangeGroup.header(of: file)
        #expect(header.kind == .snapshot)
        #expect(header.senderName == "a")
        #expect(header.since == .zero)
        #expect(header.through == (try a.store.currentToken()))
        #expect(header.ranges.isEmpty)
        #expect(summary.through == header.through)
        let metadata = Self.rowMetadata(try a.everything())
        #expect(summary.changeCount == metadata.map(\.rows.count).reduce(0, +))
        #expect(summary.bytes == (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int))

        // A fresh store that imports it holds the same rows and the same merge state: every
        // identity with its generation and per-column clocks, tombstones included.
        let d = try group.add("d")
        let imported = try d.store.importBundle(at: file)
        #expect(imported.header.kind == .snapshot)
        #expect(imported.appliedChanges == summary.changeCount)
        #expect(try d.store.currentToken() == header.through)
        #expect(try d.store.prunedToken() == header.through, "the history it skipped counts as pruned")
        #expect(try d.store.fetchHistory().isEmpty)
        let differences = try d.tables().differences(from: try a.tables(), mine: "d", theirs: "a")
        #expect(differences.isEmpty, "\(differences)")
        let received = Self.rowMetadata(try d.everything())
        #expect(received == metadata)
        #expect(
            metadata.contains { table in table.rows.contains { $0[1] == .integer(2) } }, "the scenario has tombstones")

        // Importing it again changes nothing.
        let before = try d.everything()
        #expect(try d.store.importBundle(at: file).alreadyApplied)
        #expect(try d.everything() == before)
    }

    /// A row whose metadata was saved before a migration added a column keeps one clock for the
    /// columns it had then: its row state carries that clock on each of them and none on the new
    /// column, where a row written since carries a clock on every column. A replica that joins
    /// from the snapshot holds the same rows.
    @Test func aSnapshotGivesARowSavedBeforeAMigrationNoClockOnTheAddedColumn() throws {
        let group = try ExchangeGroup(["a", "b"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('old', 'before', 1)")
        _ = try a.store.execute(sql: "INSERT INTO tags(item, tag, weight) VALUES ('old', 'x', 2)")
        let migration = Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT")
        try a.store.migrate(migration)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, color) VALUES ('new', 'after', 'red')")
        let file = group.directory.file("a.tms")
        _ = try a.store.exportSnapshot(to: file, key: a.key)

        var clocked: [String: [String: Bool]] = [:]
        _ = try Store.inspectBundle(
            at: file, transactions: { _, _ in },
            rowStates: { state in
                let key = state.key.map { "\($0.value)" }.joined(separator: "/")
                clocked[state.table + ":" + key] = Dictionary(
                    uniqueKeysWithValues: state.cells.map { ($0.name, $0.clock != nil) })
            })
        let old = try #require(clocked["items:\(SQLValue.text("old"))"])
        #expect(old["name"] == true && old["qty"] == true && old["note"] == true, "\(old)")
        #expect(old["color"] == false, "the column came after the row's clock")
        let new = try #require(clocked["items:\(SQLValue.text("new"))"])
        #expect(new.values.allSatisfy { $0 } && new.count == 6, "\(new)")
        #expect(clocked["tags:\(SQLValue.text("old"))/\(SQLValue.text("x"))"] == ["weight": true])

        let b = group["b"]
        try b.store.migrate(migration)
        #expect(try b.store.importBundle(at: file).appliedChanges == 3)
        #expect(try group.tableDifferences() == [])
    }

    /// A change may carry a key in another storage class than the table keeps it in: an integer
    /// key for a TEXT key column, as another implementation may send it, is stored as text by the
    /// column's affinity while the row metadata keeps the integer. The snapshot still finds the
    /// row, as a lookup by key does, and a replica that joins from it holds the same rows.
    @Test func aSnapshotFindsARowWhoseKeyTheTableConvertedByItsAffinity() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        let items = try #require(b.store.trackedTable(named: "items"))
        let key = History.Column("id", .integer(5))
        let crafted = try BundleCrafter.bundle(
            key: a.key, senderName: "a",
            tables: [BundleHeader.TableSchema(name: items.name, keyColumns: items.keyColumns, columns: items.columns)],
            transactions: [
                [
                    History.Change(
                        type: .insert, table: "items", key: [key],
                        values: [key, History.Column("name", .text("five"))]
                            + ["qty", "price", "photo", "note"].map {
                                History.Column($0, .null)
                            }, generation: 1)
                ]
            ])
        let path = group.directory.file("crafted.tmb")
        try Data(crafted).write(to: URL(fileURLWithPath: path))
        #expect(try b.store.importBundle(at: path).appliedTransactions == 1)
        #expect(try b.tables()["items"]?.rows.first?.first == .text("5"), "the column's affinity stored text")

        let file = group.directory.file("b.tms")
        _ = try b.store.exportSnapshot(to: file, key: b.key)
        var states: [RowState] = []
        _ = try Store.inspectBundle(
            at: file, transactions: { _, _ in }, rowStates: { if $0.table == "items" { states.append($0) } })
        #expect(states.count == 1)
        #expect(states.first?.cells.first { $0.name == "name" }?.value == .text("five"))

        #expect(try c.store.importBundle(at: file).appliedChanges == 1)
        let differences = try c.tables().differences(from: try b.tables(), mine: "c", theirs: "b")
        #expect(differences.isEmpty, "\(differences)")
    }

    /// The row-metadata tables with each writer number (in `o`, and in the clocks of `c`) replaced
    /// by the replica id it stands for: the numbers are local to each store, the ids are what must
    /// agree.
    static func rowMetadata(_ store: StoreSnapshot) -> [StoreSnapshot.Table] {
        var ids: [SQLValue: SQLValue] = [:]
        if let origins = store.tables.first(where: { $0.name == "tidemark_origins" }) {
            for row in origins.rows { ids[row[0]] = row[1] }
        }
        return store.tables.filter { $0.name.hasPrefix("tidemark_rows_") }.map { table in
            var resolved = table
            let writer = table.columns.firstIndex(of: "o")
            let clocks = table.columns.firstIndex(of: "c")
            resolved.rows = table.rows.map { row in
                var row = row
                if let writer, row[writer] != .null { row[writer] = ids[row[writer]] ?? row[writer] }
                if let clocks, case .blob(let bytes) = row[clocks] {
                    row[clocks] = .text(
                        ColumnClocksReference.entries(bytes).map { entry in
                            "\(entry.slot):\(entry.timestamp):\(ids[.integer(entry.origin)].map { "\($0)" } ?? "?")"
                        }.joined(separator: ","))
                }
                return row
            }
            return resolved
        }
    }

    /// A manual exchange past the horizon: what a peer lacks is a snapshot when the history it
    /// lacks is gone, and a change bundle otherwise.
    @Test func exportingForAPeerBehindTheHorizonWritesASnapshotItImports() throws {
        let group = try Self.prunedGroup()
        let a = group["a"]
        let d = try group.add("d")
        let file = group.directory.file("for-d.tmb")
        let summary = try a.store.exportWhatPeerLacks(since: try d.store.currentToken(), to: file, key: a.key)
        #expect(summary.kind == .snapshot)
        #expect(try ExchangeGroup.header(of: file).kind == .snapshot)
        #expect(throws: StoreError.self) {
            try a.store.exportBundle(since: .zero, to: group.directory.file("x.tmb"), key: a.key)
        }
        let imported = try d.store.importBundle(at: file)
        #expect(imported.header.kind == .snapshot && imported.appliedChanges == summary.changeCount)
        #expect(try d.store.currentToken() == (try a.store.currentToken()))
        #expect(try group.tableDifferences(["a", "d"]).isEmpty)

        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-new', 'after')")
        let next = try a.store.exportWhatPeerLacks(since: try d.store.currentToken(), to: file, key: a.key)
        #expect(next.kind == .changes && next.transactionCount == 1)
        #expect(try d.store.importBundle(at: file).appliedTransactions == 1)
        #expect(try group.tableDifferences(["a", "d"]).isEmpty)
    }

    /// A snapshot that carries a later value for one column of a row the receiver holds writes
    /// that column only. Written as an upsert, it offered SQLite a row without the table's NOT
    /// NULL title, refused before the conflict was seen: the merge settled that as a system delete,
    /// and the row went from every replica.
    @Test func aSnapshotThatUpdatesOneColumnLeavesARequiredColumnAsItIs() throws {
        let group = try ExchangeGroup(
            ["a", "b"], schema: "CREATE TABLE notes(id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT);",
            preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO notes VALUES ('n1', 'one', 'first'), ('n2', 'two', NULL)")
        for _ in 0..<2 { try group.round() }
        _ = try a.store.execute(sql: "UPDATE notes SET body = 'second' WHERE id = 'n1'")
        let file = group.directory.file("a.tms")
        _ = try a.store.exportSnapshot(to: file, key: a.key)
        _ = try b.store.importBundle(at: file)
        #expect(try b.store.conflicts().isEmpty)
        let rows = try StoreSnapshot.trackedTables(of: b.path)["notes"]?.rows
        #expect(rows == [[.text("n1"), .text("one"), .text("second")], [.text("n2"), .text("two"), .null]])
        for _ in 0..<2 { try group.round() }
        try group.expectConverged()
        #expect(try StoreSnapshot.trackedTables(of: a.path)["notes"]?.rows == rows)
    }

    /// A replica that holds another origin's transaction only as row state (from a snapshot that
    /// origin sent it directly) writes bundles assuming it; no file in the folder provides it, so
    /// the push rewrites the sender's snapshot to hold it (Protocol/pruning.md §5.4). A reader that
    /// can follow the sender's earlier bundles but not that one catches up from that snapshot,
    /// instead of waiting for the origin to publish (found by `tidemark-crash --replicas 4 --seed
    /// 20261138`, trial 456).
    @Test func aBundleThatOnlyItsSendersSnapshotCanPrecedeIsFollowedThroughIt() throws {
        let group = try Self.prunedGroup()
        let (a, b, c) = (group["a"], group["b"], group["c"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-early', 'c can follow this')")
        try group.push("a")

        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-late', 'not published by b')")
        let direct = group.directory.file("b-for-a.tms")
        _ = try b.store.exportSnapshot(to: direct, key: b.key)
        _ = try a.store.importBundle(at: direct)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-late', 'after b-late')")
        try group.push("a")
        #expect(try ExchangeGroup.through(of: group.folder(of: "a") + "/snapshot.tms")[b.id] > 0)

        let pulled = try group.pull("c", prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        let ids = try c.tables()["items"]?.rows.map { $0[0] } ?? []
        for id in ["a-early", "b-late", "a-late"] {
            #expect(ids.contains(.text(id)), "c lacks \(id)")
        }
        #expect(try c.store.currentToken().covers(try a.store.currentToken()))
    }

    /// The same with nothing of its own to push: a replica whose only news is another origin's
    /// transaction it holds as row state (that origin sent it a snapshot directly) publishes its
    /// snapshot, so that a reader gets the transaction before its origin publishes it. Before, the
    /// push found nothing new and wrote nothing (found by `tidemark-crash --replicas 4 --seed
    /// 20261144`, trial 136).
    @Test(arguments: [true, false])
    func aPushWithNothingNewStillPublishesWhatItHoldsOnlyAsRowState(pruned: Bool) throws {
        // Pruned, the reader has no bundle to follow; otherwise it follows a's bundles, and reads
        // a's snapshot for what b's files do not provide.
        let group = try pruned ? Self.prunedGroup() : PruneTests.syncedTwice(count: 4)
        let (a, b, c) = (group["a"], group["b"], group["c"])
        if !pruned { #expect(!group.bundles.isEmpty) }
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-late', 'not published by b')")
        let direct = group.directory.file("b-for-a.tms")
        _ = try b.store.exportSnapshot(to: direct, key: b.key)
        _ = try a.store.importBundle(at: direct)
        let pushed = try group.push("a")
        #expect(pushed.path == nil && pushed.snapshot != nil, "\(pushed)")
        #expect(try group.push("a").snapshot == nil, "written once")

        let pulled = try group.pull("c", prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(try c.tables()["items"]?.rows.contains { $0[0] == .text("b-late") } == true)
    }

    @Test func aNewReplicaCatchesUpFromAPrunedFolderOnItsFirstPull() throws {
        let group = try Self.prunedGroup()
        let d = try group.add("d")
        let pulled = try group.pull("d")
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.map(\.header.kind) == [.snapshot])
        #expect(try d.store.currentToken() == (try group["a"].store.currentToken()))
        try group.expectConverged()

        // d is a member like the others: its writes travel, and once all have applied everything
        // every prune empties history.
        _ = try d.store.execute(
            sql: "INSERT INTO items(id, name) VALUES ('d-1', 'from d'); UPDATE items SET note = 'd' WHERE id = 'a-1'")
        try group.round()
        try group.round()
        try group.expectConverged()
        #expect(try group["a"].tables()["items"]?.rows.contains { $0[0] == .text("d-1") } == true)
        try group.round()
        for replica in group.replicas {
            #expect(try group.prune(replica.name).blockers.isEmpty, "\(replica.name)")
            #expect(try replica.store.fetchHistory().isEmpty, "\(replica.name)")
        }
        #expect(group.bundles.isEmpty, "\(group.bundles)")
    }

    /// A peer's snapshot cut short in its header (a sync tool's interrupted copy) is junk: a new
    /// replica that could catch up only from it is told so, once while the file is unchanged, and
    /// catches up from it once it is whole again.
    @Test func aPeersSnapshotCutShortInItsHeaderIsReportedOnceAndUsedOnceWhole() throws {
        let group = try Self.prunedGroup()
        let snapshot = try #require(group.snapshots.first)
        let bytes = try #require(FileManager.default.contents(atPath: snapshot))
        try bytes.prefix(40).write(to: URL(fileURLWithPath: snapshot))
        let d = try group.add("d")
        let first = try group.pull("d", prune: false)
        #expect(first.imported.isEmpty)
        #expect(first.warnings.count == 1, "\(first.warnings)")
        #expect(first.warnings.first?.contains("/snapshot.tms: ") == true, "\(first.warnings)")
        #expect(first.warnings.first?.hasSuffix("(said once while the file is unchanged)") == true)
        let again = try group.pull("d", prune: false)
        #expect(again.warnings.isEmpty && again.imported.isEmpty, "\(again.warnings)")
        try bytes.write(to: URL(fileURLWithPath: snapshot))
        let whole = try group.pull("d")
        #expect(whole.warnings.isEmpty, "\(whole.warnings)")
        #expect(whole.imported.map(\.header.kind) == [.snapshot])
        #expect(try d.store.currentToken() == (try group["a"].store.currentToken()))
        try group.expectConverged()
    }

    /// b and c pruned without writing a snapshot (a's holds what they removed), and publish on
    /// from there: their bundles continue a's snapshot, so each of them still provides its own
    /// transactions. A push relays none of them, and a new replica catches up from a's snapshot
    /// to follow b's and c's bundles.
    @Test func bundlesThatContinueAnotherReplicasSnapshotAreNotRelayed() throws {
        let group = try Self.prunedGroup()
        let (b, c) = (group["b"], group["c"])
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-after', 'after the prune')")
        _ = try group.push("b")
        _ = try group.pull("c", prune: false)
        _ = try c.store.execute(sql: "UPDATE items SET note = 'c' WHERE id = 'b-after'")
        let pushed = try #require(try group.push("c").export)
        // c's bundle carries c's transaction only: b's bundle provides b's.
        #expect(pushed.transactionCount == 1)
        #expect(try ExchangeGroup.header(of: pushed.path).ranges.map(\.origin) == [c.id])
        #expect(group.snapshots == [group.folder(of: "a") + "/snapshot.tms"])

        let d = try group.add("d")
        let pulled = try group.pull("d", prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.map(\.header.kind) == [.snapshot, .changes, .changes])
        try group.round()
        try group.expectConverged()
        #expect(try d.tables()["items"]?.rows.contains { $0[0] == .text("b-after") && $0[5] == .text("c") } == true)
    }

    /// The one snapshot of the folder, a's, which held what b and c pruned, is cut short by a sync
    /// tool while a is away (its header intact, so it still looks like it holds everything). A new
    /// member that lacks it all cannot catch up from it; once its watermark shows that, b's next
    /// push writes b's own snapshot, and the new member catches up from that.
    @Test func aMemberThatLacksWhatWasPrunedGetsASnapshotFromTheNextPusher() throws {
        let group = try Self.prunedGroup()
        let snapshot = group.folder(of: "a") + "/snapshot.tms"
        let bytes = try #require(FileManager.default.contents(atPath: snapshot))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: snapshot))
        let d = try group.add("d")
        let stuck = try group.pull("d", prune: false)
        #expect(stuck.imported.isEmpty)
        #expect(try d.tables()["items"]?.rows.isEmpty == true)

        // b sees d's watermark; nothing else has changed.
        _ = try group.pull("b", prune: false)
        #expect(try group.push("b").snapshot == group.folder(of: "b") + "/snapshot.tms")
        // Written once: b's own snapshot now holds what b pruned.
        #expect(try group.push("b").snapshot == nil)
        let pulled = try group.pull("d")
        #expect(pulled.imported.map(\.header.kind) == [.snapshot], "\(pulled.warnings)")
        let differences = try d.tables().differences(from: try group["b"].tables(), mine: "d", theirs: "b")
        #expect(differences.isEmpty, "\(differences)")
        // c last pulled before d joined, but d's watermark in the folder shows it caught up.
        #expect(try group.push("c").snapshot == nil)
    }

    /// A replica alone prunes what it wrote (no member waits for it), then gains a peer: the
    /// history is in no bundle and never will be, so its first push writes a snapshot for the
    /// peer, and the peer then follows its later bundles.
    @Test func ownHistoryPrunedBeforeAnyPeerReachesAPeerTrustedLater() throws {
        let group = try ExchangeGroup(["a"])
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'alone')")
        #expect(try group.prune("a").removedTransactions == 1)
        let b = try group.add("b")
        #expect(try group.push("a").snapshot == group.folder(of: "a") + "/snapshot.tms")
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'later')")
        #expect(try group.push("a").path != nil)
        let pulled = try group.pull("b")
        #expect(pulled.imported.map(\.header.kind) == [.snapshot, .changes], "\(pulled.warnings)")
        #expect(try b.tables() == group["a"].tables())
    }

    /// a retires b and prunes before its own writes were ever in a bundle: the history that held
    /// them, and the retirement, went without a file. b comes back: a's next push writes its
    /// snapshot, b catches up from it, learns it was retired and rejoins.
    @Test func aMemberRetiredBeforeTheRetirersWritesWerePublishedCatchesUpWhenItReturns() throws {
        let group = try ExchangeGroup(["a", "b"])
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'never pushed')")
        _ = try group.pull("b")
        try group["a"].store.retire(peer: "b")
        #expect(try group.prune("a").removedTransactions == 2)
        _ = try group["b"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-1', 'back')")
        _ = try group.round()
        _ = try group.round()
        #expect(try group["a"].tables() == group["b"].tables())
        #expect(try group["b"].tables()["items"]?.rows.count == 2)
        #expect(try group["a"].store.members().allSatisfy { !$0.retired })
    }

    /// a's store is restored from a copy made after a's own writes, before it pulled the others'.
    /// Its own snapshot, the one the others' prunes relied on, holds what it lacks: its pull catches
    /// up from it (no other file holds the others' pruned transactions), and only then writes a
    /// later snapshot over it.
    @Test func aStoreRestoredFromABackupCatchesUpFromItsOwnSnapshot() async throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        for replica in group.replicas { try PruneTests.writeItems(replica, count: 6) }
        let a = group["a"]
        try group.push("a")
        let old = group.directory.file("a-old.db")
        try await SQLiteShell.execute(a.path, ".backup '\(old)'")
        try FileManager.default.copyItem(atPath: a.path + ".key", toPath: old + ".key")
        try group.round(prune: false)
        try group.round(prune: false)
        for name in group.names { try group.prune(name) }
        let snapshot = group.folder(of: "a") + "/snapshot.tms"
        #expect(group.snapshots == [snapshot])
        let held = try ExchangeGroup.header(of: snapshot).through

        let restored = try TestReplica(opening: old)
        _ = try restored.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-new', 'after the restore')")
        _ = try restored.store.push(to: group.folder, key: restored.key)
        let pulled = try restored.store.pull(from: group.folder, key: restored.key, prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.map(\.header.kind) == [.snapshot])
        #expect(try restored.store.currentToken().covers(held))
        try group.round(["b", "c"])
        _ = try restored.store.pull(from: group.folder, key: restored.key)
        try group.round(["b", "c"])
        _ = try restored.store.pull(from: group.folder, key: restored.key)
        #expect(try ExchangeGroup.header(of: snapshot).through.covers(held))
        for name in ["b", "c"] {
            let differences = try restored.tables().differences(
                from: try group[name].tables(), mine: "a", theirs: name)
            #expect(differences.isEmpty, "\(differences)")
        }
    }

    /// Replicas a and b, synced after a's first write; a's store backed up (with its key) to the
    /// returned path; then a's second write, not synced yet.
    static func backedUpBeforeASecondWrite() async throws -> (ExchangeGroup, old: String) {
        let group = try ExchangeGroup(["a", "b"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'before the backup')")
        try group.round(prune: false)
        let old = group.directory.file("a-old.db")
        try await SQLiteShell.execute(a.path, ".backup '\(old)'")
        try FileManager.default.copyItem(atPath: a.path + ".key", toPath: old + ".key")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'after the backup')")
        return (group, old)
    }

    /// A store restored from an older copy writes before it syncs again: the bundle its later self
    /// published holds other transactions under the same numbers. Whether the copy pushes or
    /// pulls first, it reads that bundle, refuses, and publishes nothing from then on; the bundle
    /// stays in the folder for the peers (a pull's prune used to remove it).
    @Test(arguments: [true, false]) func aRestoredCopyThatWroteBeforeSyncingRefusesToPublish(pushesFirst: Bool)
        async throws
    {
        let (group, old) = try await Self.backedUpBeforeASecondWrite()
        let a = group["a"]
        try group.round(prune: false)
        let later = group.folder(of: "a") + "/0000000002.tmb"
        #expect(FileManager.default.fileExists(atPath: later))

        let restored = try TestReplica(opening: old)
        _ = try restored.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-3', 'after the restore')")
        let refusal = ExchangeError.restoredFromOlderCopy(path: later, have: 2, bundleHas: 2)
        // A dry run of prune refuses too, and writes nothing.
        let untouched = try StoreBytes(old)
        #expect(throws: refusal) { _ = try restored.store.prune(dryRun: true, key: restored.key) }
        #expect(try StoreBytes(old) == untouched)
        // A pull reads b's watermark first, which says it holds a #2 signed for before the
        // restored copy wrote its own (Protocol/exchange.md §4.4).
        let seen =
            pushesFirst
            ? refusal
            : ExchangeError.restoredFromOlderCopy(
                path: group.folder(of: "b") + "/watermark.tmw", have: 2, bundleHas: 2)
        if pushesFirst {
            #expect(throws: refusal) { _ = try restored.store.push(to: group.folder, key: restored.key) }
        } else {
            #expect(throws: seen) { _ = try restored.store.pull(from: group.folder, key: restored.key) }
        }
        #expect(throws: seen) { _ = try restored.store.push(to: group.folder, key: restored.key) }
        #expect(
            refusal.description
                == "\(later): holds this replica's transactions up to #2, and this store holds others under those numbers: the store was restored from an older copy and wrote since"
        )
        #expect(FileManager.default.fileExists(atPath: later))
        #expect(try group["b"].tables() == a.tables())
    }

    /// The same once a's later self pruned the bundle that held its #2 into a snapshot: b's
    /// watermark, signed for a #2 before the restored copy wrote its own #2, shows it. Whether the
    /// copy pushes or pulls first, it refuses and publishes nothing (it used to push a second,
    /// different #2 under a reused bundle number, which b skipped as held: the two never
    /// converged again).
    @Test(arguments: [true, false]) func aRestoredCopyThatWroteAfterItsLaterSelfPrunedRefusesToPublish(
        pushesFirst: Bool
    ) async throws {
        let (group, old) = try await Self.backedUpBeforeASecondWrite()
        let a = group["a"]
        for _ in 0..<3 { try group.round() }
        #expect(!group.bundles.contains { $0.hasPrefix(group.folder(of: "a")) }, "\(group.files)")
        let files = group.files

        let restored = try TestReplica(opening: old)
        _ = try restored.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-3', 'after the restore')")
        let isRefusal = { (error: any Error) -> Bool in
            guard case ExchangeError.restoredFromOlderCopy = error else { return false }
            return true
        }
        if pushesFirst {
            #expect { _ = try restored.store.push(to: group.folder, key: restored.key) } throws: { isRefusal($0) }
        } else {
            #expect { _ = try restored.store.pull(from: group.folder, key: restored.key) } throws: { isRefusal($0) }
        }
        #expect { _ = try restored.store.push(to: group.folder, key: restored.key) } throws: { isRefusal($0) }
        #expect(group.files == files, "nothing published")
        #expect(try group["b"].tables() == a.tables())
    }

    /// A sync tool cuts a's snapshot short, the only file that holds what a pruned (b writes
    /// nothing): a's next push removes it and writes it again at once, without waiting for a
    /// member to need it.
    @Test func theOwnerOfADamagedSnapshotWritesItAgainOnItsNextPush() throws {
        let group = try ExchangeGroup(["a", "b"])
        try PruneTests.writeItems(group["a"], count: 6)
        try group.round()
        try group.round()
        let snapshot = group.folder(of: "a") + "/snapshot.tms"
        #expect(group.snapshots == [snapshot] && group.bundles.isEmpty, "\(group.files)")
        let bytes = try #require(FileManager.default.contents(atPath: snapshot))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: snapshot))
        let pushed = try group.push("a")
        #expect(pushed.removed.count == 1, "\(pushed.removed)")
        #expect(pushed.removed.first?.hasSuffix("; this push writes it again") == true, "\(pushed.removed)")
        #expect(pushed.snapshot == snapshot)
        let verified = try Store.inspectBundle(at: snapshot) { _, _ in }
        #expect(verified.header.through == (try group["a"].store.currentToken()))
    }

    @Test func joiningFromASnapshotTrustsItsSenderAndConverges() throws {
        let group = try Self.prunedGroup()
        let snapshot = group.folder(of: "a") + "/snapshot.tms"
        let d = try TestReplica("d", in: group.directory)
        #expect(try d.store.peers().isEmpty)

        let (sender, summary) = try d.store.join(from: snapshot)
        #expect(sender.name == "a")
        #expect(sender.publicKey == group["a"].store.publicKey)
        #expect(summary.header.kind == .snapshot)
        #expect(try d.store.peers() == [sender])
        let differences = try d.tables().differences(from: try group["a"].tables(), mine: "d", theirs: "a")
        #expect(differences.isEmpty, "\(differences)")

        // Joining again from the same file changes nothing and trusts no one twice.
        let before = try d.everything()
        #expect(try d.store.join(from: snapshot).summary.alreadyApplied)
        #expect(try d.everything() == before)

        // Introduced to the others, it syncs through the folder like any member.
        for name in ["b", "c"] { try d.trust(group[name]) }
        for other in group.replicas { try other.trust(d) }
        _ = try d.store.execute(sql: "INSERT INTO items(id, name) VALUES ('d-1', 'from d')")
        _ = try d.store.push(to: group.folder, key: d.key)
        let pulled = try d.store.pull(from: group.folder, key: d.key)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        try group.round()
        _ = try d.store.push(to: group.folder, key: d.key)
        _ = try d.store.pull(from: group.folder, key: d.key)
        try group.expectConverged()
        let dTables = try d.tables().differences(from: try group["a"].tables(), mine: "d", theirs: "a")
        #expect(dTables.isEmpty, "\(dTables)")
        #expect(try group["b"].tables()["items"]?.rows.contains { $0[0] == .text("d-1") } == true)
    }

    /// The ordinary flow that leaves a snapshot overlapping the next bundle: a writes and pushes, b
    /// pulls, a writes again and pulls (its automatic prune writes a snapshot that includes the
    /// write it has not pushed yet), then a writes once more and pushes: that bundle starts before
    /// the snapshot's end. Returns the group (a and b, all earlier history pruned) and the snapshot.
    static func snapshotOverlappingTheNextBundle() throws -> (group: ExchangeGroup, snapshot: String) {
        let group = try ExchangeGroup(["a", "b"])
        for replica in group.replicas { try PruneTests.writeItems(replica, count: 4) }
        try group.round()
        try group.round()
        return (group, try overlap(group))
    }

    /// The overlap steps on a and b (every other member silent or retired).
    static func overlap(_ group: ExchangeGroup) throws -> String {
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('w1', 'pushed')")
        try group.push("a")
        try group.pull("b")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('w2', 'not pushed before the prune')")
        let pulled = try group.pull("a")
        let report = try #require(pulled.prune)
        #expect(report.blockers.filter { $0 != "b" }.isEmpty, "\(report.blockers)")
        #expect(report.snapshots.count == 1)
        let snapshot = try #require(report.snapshots.first)
        let through = try ExchangeGroup.through(of: snapshot)
        #expect(through == (try a.store.currentToken()), "the snapshot holds the unpushed write")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('w3', 'after the prune')")
        let pushed = try #require(try group.push("a").export)
        #expect(pushed.since[a.id] < through[a.id], "the new bundle starts inside the snapshot")
        return snapshot
    }

    /// A replica that joins from such a folder catches up from the snapshot, applies the
    /// overlapping bundle, and must then be able to push its own writes (an active member never
    /// sees an expired token from push or pull).
    @Test func aNewReplicaCanPushAfterCatchingUpFromASnapshotThatOverlapsTheNextBundle() throws {
        let (group, _) = try Self.snapshotOverlappingTheNextBundle()
        let d = try group.add("d")
        let pulled = try group.pull("d")
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.map(\.header.kind).first == .snapshot)
        #expect(try d.store.currentToken() == (try group["a"].store.currentToken()))
        let differences = try d.tables().differences(from: try group["a"].tables(), mine: "d", theirs: "a")
        #expect(differences.isEmpty, "\(differences)")

        _ = try d.store.execute(sql: "INSERT INTO items(id, name) VALUES ('d-1', 'from d')")
        do {
            try group.push("d")
        } catch {
            Issue.record("d's push after catching up failed: \(error)")
            return
        }
        try group.round()
        try group.round()
        try group.expectConverged()
        #expect(try group["a"].tables()["items"]?.rows.contains { $0[0] == .text("d-1") } == true)
    }

    /// Three members in ordinary use, none retired, c pulling less often than a and b: b pulls
    /// between a's prune (whose snapshot holds a write a has not pushed yet) and a's next push, and
    /// may take a's snapshot; then it applies a's next bundle, which overlaps the snapshot. b's own
    /// push must still work.
    @Test func anActiveMemberCanPushAfterAPeersSnapshotOverlapsItsNextBundle() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b) = (group["a"], group["b"])
        try PruneTests.writeItems(a, count: 3)
        try group.round()
        try group.round()
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('w1', 'pushed')")
        try group.push("a")
        try group.pull("b")
        try group.pull("c")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('w2', 'not pushed before the prune')")
        #expect(try group.pull("a").prune?.snapshots.count == 1)

        let between = try group.pull("b")
        #expect(between.warnings.isEmpty, "\(between.warnings)")
        let caughtUp = between.imported.contains { $0.header.kind == .snapshot }
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('w3', 'after the prune')")
        try group.push("a")
        let after = try group.pull("b")
        #expect(after.warnings.isEmpty, "\(after.warnings)")
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-own', 'from b')")
        do {
            try group.push("b")
        } catch {
            Issue.record(
                "b's push failed (b \(caughtUp ? "took" : "did not take") a's snapshot on the pull between): \(error)")
            return
        }
        try group.round()
        try group.round()
        try group.expectConverged()
        #expect(try a.tables()["items"]?.rows.contains { $0[0] == .text("b-own") } == true)
    }

    /// The same for a retired member that returns: c catches up from a's snapshot, applies a's
    /// overlapping bundle, and pushes what it wrote while away.
    @Test func aReturningMemberCanPushAfterCatchingUpFromASnapshotThatOverlapsTheNextBundle() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        for replica in group.replicas { try PruneTests.writeItems(replica, count: 4) }
        try group.round()
        try group.round()
        // c stops syncing; b retires it; a and b sync until everything c lacks is pruned away.
        _ = try a.store.execute(sql: "UPDATE items SET name = 'while c was away' WHERE id = 'b-1'")
        try b.store.retire(peer: "c")
        for _ in 0..<3 { try group.round(["a", "b"]) }
        #expect(try a.store.fetchHistory().isEmpty && b.store.fetchHistory().isEmpty)
        _ = try Self.overlap(group)

        _ = try c.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c-away', 'written while away')")
        let pulled = try group.pull("c")
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.contains { $0.header.kind == .snapshot })
        #expect(try c.store.currentToken().covers(try a.store.currentToken()))
        do {
            try group.push("c")
        } catch {
            Issue.record("c's push after catching up failed: \(error)")
            return
        }
        try group.round()
        try group.round()
        try group.expectConverged()
        for replica in group.replicas {
            let items = try #require(try replica.tables()["items"])
            #expect(items.rows.contains { $0[0] == .text("c-away") }, "\(replica.name)")
            #expect(items.rows.contains { $0[0] == .text("w3") }, "\(replica.name)")
            #expect(try group.member("c", seenBy: replica.name)?.retired == false, "\(replica.name)")
        }
    }
}
