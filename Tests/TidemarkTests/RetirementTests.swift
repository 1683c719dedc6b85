import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Members that stop syncing: they hold history back by name until retired; once retired, pruning
/// proceeds; when they return they catch up by snapshot, their writes made while away reach every
/// replica (unless a delete they had not seen supersedes them), and they are active again.
@Suite struct RetirementTests {
    /// a, b and c write and sync until every one holds everything; then c stops syncing while a
    /// and b write (updating and deleting c's rows too) and sync on. Returns the group and the
    /// token c holds.
    static func cStopsSyncing() throws -> (group: ExchangeGroup, cHolds: History.Token) {
        let group = try ExchangeGroup(["a", "b", "c"])
        for replica in group.replicas { try PruneTests.writeItems(replica, count: 6) }
        try group.round()
        try group.round()
        let cHolds = try group["c"].store.currentToken()
        #expect(try group.replicas.allSatisfy { try $0.store.currentToken() == cHolds })

        _ = try group["a"].store.execute(
            sql: "UPDATE items SET name = 'renamed by a' WHERE id = 'c-1'; INSERT INTO items(id) VALUES ('a-new')")
        _ = try group["b"].store.execute(sql: "DELETE FROM tags WHERE item = 'c-2'; DELETE FROM items WHERE id = 'c-2'")
        try group.round(["a", "b"])
        _ = try group["b"].store.execute(sql: "UPDATE items SET qty = -1 WHERE id = 'a-1'")
        try group.round(["a", "b"])
        try group.round(["a", "b"])
        return (group, cHolds)
    }

    @Test func aSilentMemberHoldsHistoryBackByNameUntilRetired() throws {
        let (group, cHolds) = try Self.cStopsSyncing()
        let (a, b) = (group["a"], group["b"])
        let history = try a.store.fetchHistory()
        let lacking = history.filter { !cHolds.includes(replica: $0.origin, sequence: $0.sequence) }
        #expect(lacking.count >= 3, "a holds what c lacks")
        let needed = try group.bundlesNeeded(by: ["c"])
        #expect(!needed.isEmpty)

        for name in ["a", "b"] {
            let report = try group.prune(name)
            #expect(report.blockers == ["c"], "\(name): \(report.blockers)")
            #expect(report.horizon == cHolds, "\(name)")
            #expect(try group.member("c", seenBy: name)?.retired == false)
        }
        // Nothing c lacks was removed: not from history, not from the folder.
        let kept = try a.store.fetchHistory()
        #expect(kept.map(TransactionFacts.init) == lacking.map(TransactionFacts.init))
        #expect(Set(needed).isSubset(of: Set(group.bundles)), "removed: \(Set(needed).subtracting(group.bundles))")
        // The member list says how far behind c is.
        #expect(try a.store.members().first { $0.name == "c" }?.behindTransactions == Int64(lacking.count))
        #expect(try a.store.members().first { $0.name == "c" }?.behindInHistory == Int64(lacking.count))

        try a.store.retire(peer: "c")
        #expect(try group.member("c", seenBy: "a")?.retired == true)
        #expect(try group.member("c", seenBy: "b")?.retired == false, "b has not heard of it yet")
        // a no longer waits for c; b has not applied the retirement yet, so it holds that back.
        let afterRetiring = try group.prune("a")
        #expect(!afterRetiring.blockers.contains("c"))
        #expect(afterRetiring.removedTransactions == lacking.count)
        #expect(try a.store.fetchHistory().map(\.contextName) == ["retire"])
        // c still lacks what went; only the retirement is in history.
        let c = try #require(try a.store.members().first { $0.name == "c" })
        #expect(c.behindTransactions == Int64(lacking.count) + 1)
        #expect(c.behindInHistory == 1 && c.behindChanges == 1)

        // The retirement travels; once b applied it, everything goes.
        try group.round(["a", "b"])
        try group.round(["a", "b"])
        #expect(try group.member("c", seenBy: "b")?.retired == true)
        for name in ["a", "b"] {
            let report = try group.prune(name)
            #expect(report.blockers.isEmpty, "\(name): \(report.blockers)")
            #expect(try group[name].store.fetchHistory().isEmpty, "\(name)")
        }
        // Of a's and b's bundles none is left; c's own stay until c prunes them.
        let left = group.bundles.filter { !$0.hasPrefix(group.folder(of: "c") + "/") }
        #expect(left.isEmpty, "\(left)")
        #expect(try group["c"].store.currentToken() == cHolds, "c itself saw nothing of this")
        #expect(try a.store.prunedToken().covers(try b.store.currentToken()))
    }

    /// The whole story: c stops syncing, is retired, writes while away (through the library and the
    /// `sqlite3` shell), comes back, catches up by snapshot, and is an active member again.
    @Test func aRetiredMemberReturnsCatchesUpBySnapshotAndIsActiveAgain() async throws {
        let (group, cHolds) = try Self.cStopsSyncing()
        let (a, b, c) = (group["a"], group["b"], group["c"])
        try a.store.retire(peer: "c")
        #expect(try group.prune("a").blockers.filter { $0 != "b" }.isEmpty)
        try group.round(["a", "b"])
        try group.round(["a", "b"])
        #expect(try a.store.fetchHistory().isEmpty && b.store.fetchHistory().isEmpty)
        // a and b write on; their new bundles build on history c never received.
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-late', 'after the retirement')")
        try group.push("a")
        try group.pull("b")
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-late', 'after the retirement')")
        try group.push("b")

        // Away, c writes through the library and through another SQLite client.
        _ = try c.store.execute(
            sql:
                "INSERT INTO items(id, name, qty) VALUES ('c-away', 'written away', 1); UPDATE items SET note = 'c was here' WHERE id = 'a-2'",
            author: "away")
        try await SQLiteShell.execute(
            c.path,
            "INSERT INTO items(id, name) VALUES ('c-shell', 'from sqlite3'); UPDATE items SET price = 99.5 WHERE id = 'b-3'"
        )
        #expect(try c.store.currentToken()[c.id] > cHolds[c.id])

        // Back: the bundles c lacked are gone, so its next pull catches up from a snapshot.
        let followable = try group.bundles.filter { bundle in
            try !bundle.hasPrefix(group.folder(of: "c")) && cHolds.covers(ExchangeGroup.header(of: bundle).since)
        }
        #expect(followable.isEmpty, "bundles c could apply from its own token: \(followable)")
        let pulled: Store.PullSummary
        do {
            pulled = try group.pull("c")
        } catch {
            Issue.record("c's pull on its return failed: \(error)")
            return
        }
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        let snapshots = pulled.imported.filter { $0.header.kind == .snapshot }
        #expect(!snapshots.isEmpty, "c caught up without a snapshot: \(pulled.imported.map(\.path))")
        #expect(try c.store.currentToken().covers(try a.store.currentToken()))
        #expect(try c.store.currentToken().covers(try b.store.currentToken()))
        #expect(try group.member("c", seenBy: "c")?.retired == false, "c rejoined on its pull")

        do {
            try group.push("c")
            try group.round()
            try group.round()
        } catch {
            Issue.record("syncing after c's return failed: \(error)")
            return
        }
        try group.expectConverged()
        for replica in group.replicas {
            let items = try #require(try replica.tables()["items"])
            func row(_ id: String) -> [SQLValue]? { items.rows.first { $0[0] == .text(id) } }
            #expect(row("c-away")?[1] == .text("written away"), "\(replica.name)")
            #expect(row("c-shell")?[1] == .text("from sqlite3"), "\(replica.name)")
            #expect(row("a-2")?[5] == .text("c was here"), "\(replica.name)")
            #expect(row("b-3")?[3] == .real(99.5), "\(replica.name)")
            #expect(row("a-late") != nil && row("b-late") != nil, "\(replica.name)")
            #expect(row("c-1")?[1] == .text("renamed by a"), "\(replica.name)")
            #expect(row("c-2") == nil, "\(replica.name)")
            for name in ["a", "b", "c"] {
                #expect(
                    try group.member(name, seenBy: replica.name)?.retired == false,
                    "\(replica.name) sees \(name) retired")
            }
        }
        // Now every member has applied everything: all prune to nothing, and the folder empties.
        try group.round()
        for replica in group.replicas {
            let report = try group.prune(replica.name)
            #expect(report.blockers.isEmpty, "\(replica.name): \(report.blockers)")
            #expect(try replica.store.fetchHistory().isEmpty, "\(replica.name)")
        }
        #expect(group.bundles.isEmpty, "\(group.bundles)")
    }

    /// A delete's tombstone outlives the history that carried it: a retired member that still
    /// holds the row and updates it offline cannot bring it back (its update is of an older life).
    @Test func aDeletedRowStaysDeletedWhenAStaleMemberUpdatesItAfterPruning() async throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        _ = try a.store.execute(
            sql: "INSERT INTO items(id, name, qty) VALUES ('x', 'doomed', 1); INSERT INTO tags VALUES ('x', 't', 1)")
        try group.round()
        try group.round()
        #expect(
            try group.replicas.allSatisfy { try $0.tables()["items"]?.rows.contains { $0[0] == .text("x") } == true })

        // c stops syncing; a deletes the row; a and b sync, retire c, and prune everything.
        _ = try a.store.execute(sql: "DELETE FROM tags WHERE item = 'x'; DELETE FROM items WHERE id = 'x'")
        try group.round(["a", "b"])
        try a.store.retire(peer: "c")
        try group.round(["a", "b"])
        try group.round(["a", "b"])
        for replica in [a, b] {
            #expect(try group.prune(replica.name).blockers.isEmpty)
            #expect(try replica.store.fetchHistory().isEmpty, "\(replica.name)")
            // The tombstone is row state, not history.
            let metadata = try #require(try replica.everything()["tidemark_rows_1"])
            #expect(
                metadata.rows.contains { $0[0] == .text("x") && $0[1] == .integer(2) }, "\(replica.name): \(metadata)")
        }

        // c, still holding x, updates it offline, through the library and the shell.
        _ = try c.store.execute(sql: "UPDATE items SET name = 'stale update' WHERE id = 'x'")
        try await SQLiteShell.execute(
            c.path, "UPDATE items SET qty = 7 WHERE id = 'x'; INSERT OR REPLACE INTO tags VALUES ('x', 't', 2)")

        // c pushes first: a and b apply its stale changes, which change nothing.
        #expect(try group.push("c").export?.transactionCount == 2)
        for name in ["a", "b"] {
            let pulled = try group.pull(name)
            #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
            #expect(
                try group[name].tables()["items"]?.rows.contains { $0[0] == .text("x") } == false,
                "x came back on \(name)")
            #expect(
                try group[name].tables()["tags"]?.rows.contains { $0[0] == .text("x") } == false,
                "x's tag came back on \(name)")
        }
        // Then c pulls, catching up by snapshot: its own copy goes.
        let pulled = try group.pull("c")
        #expect(pulled.imported.contains { $0.header.kind == .snapshot })
        #expect(try c.tables()["items"]?.rows.contains { $0[0] == .text("x") } == false)
        try group.round()
        try group.round()
        try group.expectConverged()
        for replica in group.replicas {
            #expect(
                try replica.tables()["items"]?.rows.contains { $0[0] == .text("x") } == false,
                "x came back on \(replica.name)")
            #expect(
                try replica.tables()["tags"]?.rows.contains { $0[0] == .text("x") } == false,
                "x's tag came back on \(replica.name)")
        }
    }

    /// With every other member retired, a prune has no one to wait for; what this replica wrote
    /// and never pushed must still reach the others when they return (in a bundle or a snapshot),
    /// and its later bundles must stay applicable for them.
    @Test func writesMadeWhileEveryOtherMemberIsRetiredReachThemWhenTheyReturn() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        try PruneTests.writeItems(a, count: 3)
        try group.round()
        try group.round()
        for name in group.names { try group.prune(name) }
        #expect(group.bundles.isEmpty)

        // b goes silent; a retires it, writes, prunes (no one left to wait for) and pushes.
        try a.store.retire(peer: "b")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('x', 'written after retiring b')")
        let report = try group.prune("a")
        #expect(report.blockers.isEmpty)
        let pushed = try group.push("a")

        // b returns.
        let back = try group.pull("b")
        #expect(back.warnings.isEmpty, "\(back.warnings)")
        #expect(
            try b.tables()["items"]?.rows.contains { $0[0] == .text("x") } == true,
            "a's write made while b was retired never reached b (a's push: \(pushed.path ?? "nothing new to push"))")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('y', 'written after b came back')")
        try group.push("a")
        let later = try group.pull("b")
        #expect(later.warnings.isEmpty, "\(later.warnings)")
        #expect(try b.tables()["items"]?.rows.contains { $0[0] == .text("y") } == true)
        try group.round()
        try group.round()
        try group.expectConverged()
    }

    @Test func retirementIsAReplicatedWriteUndoneByTheMembersNextSync() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        try group.round()
        #expect(throws: ExchangeError.unknownPeer("nobody")) { try group["a"].store.retire(peer: "nobody") }

        try group["a"].store.retire(peer: "c")
        try group.push("a")
        try group.pull("b")
        #expect(try group.member("c", seenBy: "b")?.retired == true)
        #expect(try group.member("c", seenBy: "c")?.retired == false, "c has not heard of it")

        // c hears of it on its next pull and makes itself active again; the rejoin wins everywhere.
        try group.pull("c")
        #expect(try group.member("c", seenBy: "c")?.retired == false)
        try group.round()
        try group.round()
        for observer in group.names {
            #expect(try group.member("c", seenBy: observer)?.retired == false, "\(observer) still sees c retired")
        }
        try group.expectConverged()
    }

    /// A retired member that syncs by hand (export and import, no folder) rejoins as a pull
    /// would, and the file it exports carries that to the peer.
    @Test func aRetiredMemberThatSyncsByHandRejoins() throws {
        let group = try ExchangeGroup(["a", "c"])
        let (a, c) = (group["a"], group["c"])
        try a.store.retire(peer: "c")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('x', 'one')")
        let toC = group.directory.file("a-to-c.tmb")
        _ = try a.store.exportWhatPeerLacks(since: try c.store.currentToken(), to: toC, key: a.key, readableBy: c.id)
        _ = try c.store.importBundle(at: toC)
        #expect(try c.store.members().first { $0.isSelf }?.retired == false)
        let toA = group.directory.file("c-to-a.tmb")
        _ = try c.store.exportWhatPeerLacks(since: try a.store.currentToken(), to: toA, key: c.key, readableBy: a.id)
        _ = try a.store.importBundle(at: toA)
        #expect(try a.store.members().first { $0.name == "c" }?.retired == false)
    }
}
