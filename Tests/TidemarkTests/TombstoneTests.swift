import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Tombstones go once every member has applied their delete (Protocol/pruning.md §6), and a row
/// whose tombstone went never comes back, whichever replica still remembers it.
@Suite struct TombstoneTests {
    static let schema = "CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT);"

    /// a, b and c each write two notes and sync until everyone holds everything.
    static func group() throws -> ExchangeGroup {
        let group = try ExchangeGroup(["a", "b", "c"], schema: schema, preserve: [])
        for replica in group.replicas {
            _ = try replica.store.execute(
                sql: "INSERT INTO notes VALUES ('\(replica.name)-1', 'one'), ('\(replica.name)-2', 'two')")
        }
        try group.round()
        try group.round()
        return group
    }

    static func tombstones(_ replica: TestReplica) throws -> Int { try replica.store.status().tombstones }

    /// The notes `replica` holds, ordered by id.
    static func notes(_ replica: TestReplica) throws -> [[SQLValue]] {
        try StoreSnapshot.trackedTables(of: replica.path)["notes"]?.rows ?? []
    }

    /// Keeps a snapshot of a's store in a file, has `writer` run `delete`, syncs until every
    /// replica dropped the tombstones, and adds `d`, which joins from the kept file.
    static func joinFromBeforeADelete(_ group: ExchangeGroup, _ delete: String, by writer: String) throws -> TestReplica
    {
        let old = group.directory.file("old.tms")
        _ = try group["a"].store.exportSnapshot(to: old, key: group["a"].key)
        _ = try group[writer].store.execute(sql: delete)
        for _ in 0..<3 { try group.round() }
        for replica in group.replicas { #expect(try tombstones(replica) == 0, "\(replica.name)") }
        let d = try group.add("d")
        _ = try d.store.importBundle(at: old)
        return d
    }

    /// A delete counts as a tombstone as soon as it is made, not once an exchange has folded it,
    /// and reading the count writes nothing.
    @Test func statusCountsADeleteAsATombstoneAtOnce() throws {
        let group = try Self.group()
        let a = group["a"]
        _ = try a.store.execute(sql: "DELETE FROM notes WHERE id IN ('a-1', 'b-1', 'c-2')")
        let before = try StoreSnapshot.everything(of: a.path)
        #expect(try Self.tombstones(a) == 3)
        #expect(try StoreSnapshot.everything(of: a.path) == before)
        _ = try a.store.execute(sql: "INSERT INTO notes VALUES ('a-1', 'back'), ('a-9', 'new')")
        _ = try a.store.execute(sql: "INSERT INTO notes VALUES ('a-8', 'brief'); DELETE FROM notes WHERE id = 'a-8'")
        #expect(try Self.tombstones(a) == 3, "a-1 lives again; a-8 lived and went")
        #expect(try Self.tombstones(group["b"]) == 0)
        _ = try group.push("a")
        #expect(try Self.tombstones(a) == 3, "the same once folded")
    }

    @Test func aTombstoneGoesOnlyOnceEveryMemberHasAppliedItsDelete() throws {
        let group = try Self.group()
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'b-1'")
        try group.round(["a", "b"])
        try group.round(["a", "b"])
        // c has not applied the delete: a and b keep its tombstone however often they prune.
        for name in ["a", "b"] {
            #expect(try group.prune(name).droppedTombstones == 0)
            #expect(try Self.tombstones(group[name]) == 1, "\(name)")
        }
        // A dry run reports what the real run drops, and drops nothing.
        try group.round()
        try group.round(prune: false)
        #expect(try group.prune("a", dryRun: true).droppedTombstones == 1)
        #expect(try Self.tombstones(group["a"]) == 1)
        #expect(try group.prune("a").droppedTombstones == 1)
        #expect(try Self.tombstones(group["a"]) == 0)
        try group.round()
        for replica in group.replicas { #expect(try Self.tombstones(replica) == 0, "\(replica.name)") }
        try group.expectConverged()
    }

    @Test func tombstonesOfLaterDeletesGoAfterAnEarlierDrop() throws {
        let group = try Self.group()
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'b-1'")
        for _ in 0..<2 { try group.round() }
        #expect(try Self.tombstones(group["a"]) == 0)
        // Nothing newer to drop: prunes change nothing, and mark nothing that hides a later delete.
        for _ in 0..<2 { #expect(try group.prune("a").droppedTombstones == 0) }
        _ = try group["b"].store.execute(sql: "DELETE FROM notes WHERE id = 'c-1'")
        try group.round(["a", "b"])
        #expect(try group.prune("a").droppedTombstones == 0, "c has not applied the second delete")
        _ = try group["c"].store.execute(sql: "DELETE FROM notes WHERE id = 'a-2'")
        for _ in 0..<2 { try group.round() }
        for replica in group.replicas { #expect(try Self.tombstones(replica) == 0, "\(replica.name)") }
        for replica in group.replicas {
            #expect(try Self.notes(replica).map { $0[0] } == [.text("a-1"), .text("b-2"), .text("c-2")])
        }
        try group.expectConverged()
    }

    @Test func aTombstoneStaysUntilThisReplicaHoldsWhatEveryMemberHeldWhenItAppliedTheDelete() throws {
        let group = try Self.group()
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'b-1'")
        // c edits the row before it learns of the delete; its bundle is slow to reach a.
        _ = try group["c"].store.execute(sql: "UPDATE notes SET body = 'late' WHERE id = 'b-1'")
        _ = try group.push("c")
        let slow = try #require(group.bundles.filter { $0.hasPrefix(group.folder(of: "c")) }.max())
        let aside = group.directory.file("aside.tmb")
        try FileManager.default.moveItem(atPath: slow, toPath: aside)
        _ = try group.push("a")
        for name in ["b", "c"] { _ = try group.pull(name) }
        // a sees b's and c's watermarks cover the delete, but c's covers an edit a does not hold.
        _ = try group.pull("a", prune: false)
        #expect(try group.prune("a").droppedTombstones == 0)
        #expect(try Self.tombstones(group["a"]) == 1)
        try FileManager.default.moveItem(atPath: aside, toPath: slow)
        _ = try group.pull("a", prune: false)
        #expect(try group.prune("a").droppedTombstones == 1)
        for _ in 0..<2 { try group.round() }
        for replica in group.replicas {
            #expect(try !Self.notes(replica).contains { $0.first == .text("b-1") }, "\(replica.name)")
        }
        try group.expectConverged()
    }

    @Test func aRetiredMemberThatHasNotAppliedADeleteKeepsItsTombstone() throws {
        let group = try Self.group()
        try group["a"].store.retire(peer: "c")
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'c-1'")
        // c, retired and away, edits the row a deleted.
        _ = try group["c"].store.execute(sql: "UPDATE notes SET body = 'edited while away' WHERE id = 'c-1'")
        for _ in 0..<3 { try group.round(["a", "b"]) }
        for name in ["a", "b"] {
            #expect(try Self.tombstones(group[name]) == 1, "\(name) keeps the tombstone c may still write to")
        }
        // c returns: its stale edit does not bring the row back anywhere.
        for _ in 0..<3 { try group.round() }
        for replica in group.replicas {
            let ids = try Self.notes(replica).map { $0[0] }
            #expect(!ids.contains(.text("c-1")), "\(replica.name)")
        }
        try group.expectConverged()
        for replica in group.replicas { #expect(try Self.tombstones(replica) == 0, "\(replica.name)") }
    }

    /// A retired member that edited a row twice while away, the row deleted meanwhile: every
    /// replica lists the value it wrote last, not the first it wrote.
    @Test func aRetiredMembersDiscardedEditsAreListedWithTheValuesItWroteLast() throws {
        let group = try Self.group()
        try group["a"].store.retire(peer: "c")
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'c-1'")
        _ = try group["c"].store.execute(sql: "UPDATE notes SET body = 'first' WHERE id = 'c-1'")
        _ = try group["c"].store.execute(sql: "UPDATE notes SET body = 'last' WHERE id = 'c-1'")
        for _ in 0..<2 { try group.round(["a", "b"]) }
        for _ in 0..<3 { try group.round() }
        try group.expectConverged()
        for replica in group.replicas {
            let listed = try replica.store.conflicts().filter { $0.key.contains("c-1") }
            #expect(listed.map(\.row) == [#"{"body":"last"}"#], "\(replica.name): \(listed)")
        }
    }

    @Test func aLifeStartedWhereATombstoneWentOutranksTheTombstoneOthersStillKeep() throws {
        let group = try Self.group()
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'b-2'")
        // c applies everything but never prunes; a drops the tombstone.
        _ = try group.push("a")
        _ = try group.pull("c", prune: false)
        for _ in 0..<2 { try group.round(["a", "b"]) }
        #expect(try Self.tombstones(group["a"]) == 0)
        #expect(try Self.tombstones(group["c"]) == 1)

        // a writes the row again: its new life must beat the tombstone c remembers.
        _ = try group["a"].store.execute(sql: "INSERT INTO notes VALUES ('b-2', 'back, on purpose')")
        _ = try group.push("a")
        _ = try group.pull("c", prune: false)
        #expect(try Self.notes(group["c"]).contains { $0 == [.text("b-2"), .text("back, on purpose")] })

        // A replica joining from a's snapshot learns the floor too: its own life of a row whose
        // tombstone a dropped outranks c's tombstone.
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'a-1'")
        for _ in 0..<2 { try group.round(["a", "b"]) }
        _ = try group.pull("c", prune: false)
        for _ in 0..<2 { try group.round(["a", "b"]) }
        #expect(try Self.tombstones(group["a"]) == 0)
        let snapshot = group.directory.file("a.tms")
        _ = try group["a"].store.exportSnapshot(to: snapshot, key: group["a"].key)
        #expect(try ExchangeGroup.header(of: snapshot).floors.map(\.table) == ["notes"])
        let d = try group.add("d")
        _ = try d.store.importBundle(at: snapshot)
        _ = try d.store.execute(sql: "INSERT INTO notes VALUES ('a-1', 'new from d')")
        _ = try group.push("d")
        _ = try group.pull("c", prune: false)
        #expect(try Self.notes(group["c"]).contains { $0 == [.text("a-1"), .text("new from d")] })
        try group.round()
        try group.round()
        try group.expectConverged()
    }

    @Test func aReplicaJoiningFromAnOldSnapshotLosesTheRowsWhoseTombstonesWentSince() throws {
        let group = try Self.group()
        // d joins from a file kept from before the delete: the history since is gone, so it
        // catches up from a peer's snapshot, which has neither the row nor its tombstone.
        let d = try Self.joinFromBeforeADelete(
            group, "DELETE FROM notes WHERE id = 'b-1'; UPDATE notes SET body = 'edited' WHERE id = 'c-1'", by: "a")
        #expect(try Self.notes(d).contains { $0[0] == .text("b-1") })
        // A row d starts before it catches up is below the floor too, but the snapshot's sender
        // never saw it: it stays.
        _ = try d.store.execute(sql: "INSERT INTO notes VALUES ('d-1', 'from d')")
        let pulled = try group.pull("d")
        #expect(pulled.imported.contains { $0.header.kind == .snapshot })
        #expect(try !Self.notes(d).contains { $0[0] == .text("b-1") }, "the row deleted before d joined stays deleted")
        #expect(try Self.notes(d).contains { $0 == [.text("c-1"), .text("edited")] })
        #expect(try Self.notes(d).contains { $0 == [.text("d-1"), .text("from d")] })
        for _ in 0..<2 { try group.round() }
        for replica in group.replicas {
            let ids = try Self.notes(replica).map { $0[0] }
            #expect(!ids.contains(.text("b-1")) && ids.contains(.text("d-1")), "\(replica.name)")
        }
        try group.expectConverged()
    }

    @Test func ownEditsOfARowASnapshotShowsForgottenAreListedAndTheRowStaysDeleted() throws {
        let group = try ExchangeGroup(
            ["a", "b"], schema: "CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT, tag TEXT);", preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO notes VALUES ('n-1', 'one', NULL), ('n-2', 'two', NULL)")
        for _ in 0..<2 { try group.round() }
        // d joins from the old file and edits the rows the others deleted before it catches up:
        // one column of one, every column of the other (no write the sender saw is left in it).
        let d = try Self.joinFromBeforeADelete(group, "DELETE FROM notes WHERE id IN ('n-1', 'n-2')", by: "b")
        _ = try d.store.execute(sql: "UPDATE notes SET tag = 'late' WHERE id = 'n-1'")
        _ = try d.store.execute(sql: "UPDATE notes SET body = 'all', tag = 'new' WHERE id = 'n-2'")
        _ = try group.pull("d")
        for (id, value) in [("n-1", "late"), ("n-2", "all")] {
            let listed = try d.store.conflicts().filter { $0.key.contains(id) }
            #expect(listed.map(\.kind) == ["deleted"], "\(id)")
            #expect(listed.first?.row.contains(value) == true, "\(listed)")
        }
        for _ in 0..<2 { try group.round() }
        for replica in group.replicas {
            let ids = try Self.notes(replica).map { $0[0] }
            #expect(!ids.contains(.text("n-1")) && !ids.contains(.text("n-2")), "\(replica.name)")
        }
        try group.expectConverged()
    }

    /// d joins from the old file, edits one of the rows the others deleted, and prunes alone before
    /// it ever syncs: it retires the others for lag, so its edit is only in its snapshot, from
    /// which they catch up. The rows' lives had ended there, with their tombstones gone: they stay
    /// deleted on every replica, and d's edit is listed (found by a randomized audit with 6
    /// replicas in two folders; before, every peer took the rows back, and d did not).
    @Test func rowsASnapshotHoldsInALifeThatEndedHereStayDeleted() throws {
        let group = try ExchangeGroup(
            ["a", "b", "c"], schema: "CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT, tag TEXT);", preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO notes VALUES ('n-1', 'one', NULL), ('n-2', 'two', NULL)")
        for _ in 0..<2 { try group.round() }
        let d = try Self.joinFromBeforeADelete(group, "DELETE FROM notes WHERE id IN ('n-1', 'n-2')", by: "b")
        _ = try d.store.execute(sql: "UPDATE notes SET tag = 'late' WHERE id = 'n-1'")
        Thread.sleep(forTimeInterval: 0.3)
        let pruned = try group.prune("d", maxLag: 0.2)
        #expect(pruned.retired.sorted() == ["a", "b", "c"])
        #expect(try d.store.status().transactionCount == 0)
        #expect(try group.push("d").snapshot != nil)
        _ = try group.pull("a")
        let listed = try group["a"].store.conflicts().filter { $0.key.contains("n-1") }
        #expect(listed.map(\.kind) == ["deleted"])
        #expect(listed.first?.row.contains("late") == true, "\(listed)")
        for _ in 0..<3 { try group.round() }
        for replica in group.replicas {
            let ids = try Self.notes(replica).map { $0[0] }
            #expect(!ids.contains(.text("n-1")) && !ids.contains(.text("n-2")), "\(replica.name)")
        }
        try group.expectConverged()
    }

    @Test func aRowStartedByAChangeTheSnapshotLacksStaysThoughOwnEditsCoverIt() throws {
        let group = try Self.group()
        // d joins from the old file, receives by hand a row e started, which no one in the group
        // has seen, and rewrites it: none of e's writes is left in it, and it is below the floor.
        let d = try Self.joinFromBeforeADelete(group, "DELETE FROM notes WHERE id = 'b-1'", by: "a")
        let e = try group.add("e")
        _ = try e.store.execute(sql: "INSERT INTO notes VALUES ('e-1', 'from e')")
        let bundle = group.directory.file("e.tmb")
        _ = try e.store.exportBundle(since: .zero, to: bundle, key: e.key)
        _ = try d.store.importBundle(at: bundle)
        _ = try d.store.execute(sql: "UPDATE notes SET body = 'rewritten by d' WHERE id = 'e-1'")
        let pulled = try group.pull("d")
        #expect(pulled.imported.contains { $0.header.kind == .snapshot })
        #expect(try Self.notes(d).contains { $0 == [.text("e-1"), .text("rewritten by d")] })
        #expect(try !Self.notes(d).contains { $0[0] == .text("b-1") })
        #expect(try d.store.conflicts().isEmpty)
        for _ in 0..<2 { try group.round() }
        for replica in group.replicas {
            #expect(
                try Self.notes(replica).contains { $0 == [.text("e-1"), .text("rewritten by d")] }, "\(replica.name)")
        }
        try group.expectConverged()
    }

    /// d joins from before a parent's delete whose tombstone went since, and adds a child under it
    /// whose `SET NULL` breaks its NOT NULL. Catching up deletes the parent the snapshot no longer
    /// has: the child is settled first, as a merged delete settles it, and the pull goes through.
    @Test func aForgottenParentWhoseActionBreaksAChildSettlesTheChild() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY, name TEXT);
                CREATE TABLE c(id TEXT PRIMARY KEY, pid TEXT NOT NULL REFERENCES p(id) ON DELETE SET NULL);
                """, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO p VALUES ('P', 'parent'), ('Q', 'other')")
        for _ in 0..<2 { try group.round() }
        let d = try Self.joinFromBeforeADelete(group, "DELETE FROM p WHERE id = 'P'", by: "a")
        _ = try d.store.execute(sql: "INSERT INTO c VALUES ('c1', 'P')")
        let pulled = try group.pull("d")
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(try StoreSnapshot.trackedTables(of: d.path)["p"]?.rows == [[.text("Q"), .text("other")]])
        #expect(try StoreSnapshot.trackedTables(of: d.path)["c"]?.rows == [])
        for _ in 0..<2 { try group.round() }
        try group.expectConverged()
    }
}
