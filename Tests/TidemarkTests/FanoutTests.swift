import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Each change crosses a folder once (Protocol/exchange.md §3.1): a push carries the replica's own
/// transactions and relays another origin's only where no file of that folder provides them.
@Suite struct FanoutTests {
    @Test func sixteenReplicasWriteEachChangeToTheFolderOnce() throws {
        let names = (1...16).map { String(format: "r%02d", $0) }
        let group = try ExchangeGroup(names)
        for replica in group.replicas { try PruneTests.writeItems(replica, count: 40) }
        // The unique data: each replica's own transactions in one bundle, as its first push writes them.
        var unique = 0
        for replica in group.replicas {
            var others = try replica.store.currentToken()
            others[replica.id] = 0
            unique += try replica.export(since: others, to: group.directory.file("own-\(replica.name).tmb")).bytes
        }
        var written = 0
        var rounds = 0
        while rounds < 6 {
            rounds += 1
            var pushed = 0
            for name in names { pushed += try group.push(name).export?.bytes ?? 0 }
            for name in names { try group.pull(name, prune: false) }
            written += pushed
            if pushed == 0 { break }
        }
        #expect(rounds == 2, "quiet after one round of pushes and pulls")
        #expect(try group.tableDifferences() == [])
        let ratio = Double(written) / Double(unique)
        print("16 replicas: \(written) bytes of bundles written for \(unique) bytes of unique data (\(ratio)×)")
        #expect(ratio <= 1.1)
        #expect(!group.files.contains { $0.contains("/watermark-") }, "a relay in a folder every member reaches")
    }

    @Test func writesCrossAChainOfTwoFoldersThroughTheReplicaInBoth() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        let first = group.folder
        let second = try group.anotherFolder("second")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('from-a', 'a')")
        _ = try c.store.execute(sql: "INSERT INTO items(id, name) VALUES ('from-c', 'c')")
        for _ in 0..<3 {
            _ = try a.store.push(to: first, key: a.key)
            _ = try b.store.pull(from: first, key: b.key, prune: false)
            _ = try b.store.push(to: second, key: b.key)
            _ = try c.store.pull(from: second, key: c.key, prune: false)
            _ = try c.store.push(to: second, key: c.key)
            _ = try b.store.pull(from: second, key: b.key, prune: false)
            _ = try b.store.push(to: first, key: b.key)
            _ = try a.store.pull(from: first, key: a.key, prune: false)
        }
        #expect(try group.tableDifferences() == [])
        #expect(
            try c.store.execute(sql: "SELECT count(*) FROM items WHERE id = 'from-a'").0[0].rows[0][0] == .integer(1))
        // In the first folder b relays c's transactions, never a's; in the second, a's, never c's.
        for (folder, notRelayed) in [(first, a), (second, c)] {
            for bundle in ExchangeGroup.bundles(in: folder, of: b) {
                let header = try ExchangeGroup.header(of: bundle)
                #expect(!header.ranges.contains { $0.origin == notRelayed.id }, "\(bundle) relays \(notRelayed.name)")
            }
        }
    }

    /// a and b share one folder, b and c another, and each prunes after every pull. a and c never
    /// meet, so each learns the other's watermark only as b relays it: without it neither end ever
    /// prunes its history, and once b pruned its relay bundles into its snapshot, a relayed c's
    /// transactions back into the first folder.
    @Test func theEndsOfAChainOfFoldersPruneAndRelayNothingBack() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        let first = group.folder
        let second = try group.anotherFolder("second")
        func pull(_ replica: TestReplica, _ folder: String) throws {
            let pulled = try replica.store.pull(from: folder, key: replica.key)
            #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        }
        func round() throws {
            _ = try a.store.push(to: first, key: a.key)
            try pull(b, first)
            _ = try b.store.push(to: second, key: b.key)
            try pull(c, second)
            _ = try c.store.push(to: second, key: c.key)
            try pull(b, second)
            _ = try b.store.push(to: first, key: b.key)
            try pull(a, first)
        }
        for step in 0..<4 {
            _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a\(step)', 'a')")
            _ = try c.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c\(step)', 'c')")
            try round()
        }
        for _ in 0..<3 { try round() }
        #expect(try group.tableDifferences() == [])
        #expect(try a.store.knownToken(of: c.id) == c.store.currentToken())
        #expect(try c.store.knownToken(of: a.id) == a.store.currentToken())
        for end in [a, c] {
            let report = try end.store.prune(key: end.key)
            #expect(report.blockers == [], "\(end.name) is held back by \(report.blockers)")
            #expect(try end.store.status().transactionCount == 0, "\(end.name) pruned everything")
        }
        for (folder, relaying, notRelayed) in [(first, a, c), (second, c, a)] {
            for bundle in ExchangeGroup.bundles(in: folder, of: relaying) {
                let header = try ExchangeGroup.header(of: bundle)
                #expect(
                    !header.ranges.contains { $0.origin == notRelayed.id },
                    "\(relaying.name) relays \(notRelayed.name)'s writes back: \(bundle)")
            }
        }
        // b relays c's watermark into the first folder until c leaves its own there.
        let relay = "\(first)/\(b.id)/watermark-\(c.id).tmw"
        #expect(FileManager.default.fileExists(atPath: relay))
        try pull(c, first)
        try pull(b, first)
        #expect(!FileManager.default.fileExists(atPath: relay))
    }

    /// A member that never reaches a folder still signs a watermark at each pull elsewhere: its relay
    /// there follows the latest, so that `--max-lag` there does not retire it while it syncs (it
    /// followed only a new token before). A relay its owner finds damaged is written again, with no
    /// warning on every pull.
    @Test func aRelayFollowsTheMembersLatestWatermarkAndItsOwnerMendsIt() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        let first = group.folder
        let second = try group.anotherFolder("second")
        _ = try c.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c', 'c')")
        func round() throws {
            for (replica, folder) in [(c, second), (b, second), (b, first), (a, first)] {
                _ = try replica.store.push(to: folder, key: replica.key)
                let pulled = try replica.store.pull(from: folder, key: replica.key)
                #expect(pulled.warnings.isEmpty, "\(replica.name): \(pulled.warnings)")
            }
        }
        try round()
        try round()
        let seen = { try a.store.members().first { $0.name == "c" }?.signedAt }
        let before = try #require(try seen())
        Thread.sleep(forTimeInterval: 0.01)
        try round()
        #expect(try #require(try seen()) > before, "a learns c's latest watermark, its token unchanged")
        #expect(try a.store.prune(maxLag: 5, key: a.key).retired.isEmpty)
        let relay = "\(first)/\(b.id)/watermark-\(c.id).tmw"
        let bytes = try #require(FileManager.default.contents(atPath: relay))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: relay))
        try round()
        try round()
        #expect(try ExchangeGroup.header(of: relay).kind == .watermark)
        try group.expectConverged()
    }

    /// a and b share one folder; b, c, d and e another. b relays a's transactions into the second
    /// folder, and there they cross once: c, d and e hold them from b's bundle, which provides them
    /// to every reader, and relay nothing of a's (before, each relayed them again, four copies of
    /// a's data in a folder a does not publish in).
    @Test func aRelayThatAFileAlreadyProvidesIsNotMadeAgain() throws {
        let group = try ExchangeGroup(["a", "b", "c", "d", "e"])
        let first = group.folder
        let second = try group.anotherFolder("second")
        try PruneTests.writeItems(group["a"], count: 50)
        let relayers = ["c", "d", "e"]
        for name in relayers {
            _ = try group[name].store.execute(sql: "INSERT INTO items(id, name) VALUES ('from-\(name)', '\(name)')")
        }
        for round in 0..<3 {
            // New writes of a each round: b's later bundles, which assume c's, d's and e's, carry them.
            _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-round-\(round)', 'a')")
            _ = try group["a"].store.push(to: first, key: group["a"].key)
            _ = try group["b"].store.pull(from: first, key: group["b"].key, prune: false)
            for name in ["b"] + relayers {
                _ = try group[name].store.push(to: second, key: group[name].key)
            }
            for name in ["b"] + relayers {
                let pulled = try group[name].store.pull(from: second, key: group[name].key, prune: false)
                #expect(pulled.warnings.isEmpty, "\(name): \(pulled.warnings)")
            }
            _ = try group["b"].store.push(to: first, key: group["b"].key)
            _ = try group["a"].store.pull(from: first, key: group["a"].key, prune: false)
        }
        #expect(try group.tableDifferences() == [])
        for name in relayers {
            for bundle in ExchangeGroup.bundles(in: second, of: group[name]) {
                let header = try ExchangeGroup.header(of: bundle)
                #expect(!header.ranges.contains { $0.origin == group["a"].id }, "\(bundle) relays a again")
            }
        }
        #expect(
            try ExchangeGroup.bundles(in: second, of: group["b"]).contains {
                try ExchangeGroup.header(of: $0).ranges.contains { $0.origin == group["a"].id }
            }, "b relays a's transactions once")
        // A replica that joins the second folder later follows the bundles there alone.
        let late = try group.add("late")
        let pulled = try late.store.pull(from: second, key: late.key, prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(try late.tables() == group["a"].tables())
    }

    @Test func aReplicaWhoseBundlesDependOnLostFilesPublishesOneThatDependsOnNone() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('from-a', 'a')")
        try group.round(prune: false)
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('from-b', 'b')")
        try group.round(prune: false)
        // a's files are lost (not pruned: no snapshot). b's bundle needs them; b carries them again.
        for bundle in ExchangeGroup.bundles(in: group.folder, of: a) {
            try FileManager.default.removeItem(atPath: bundle)
        }
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('again', 'b')")
        let pushed = try #require(try group.push("b").path)
        #expect(try ExchangeGroup.header(of: pushed).ranges.contains { $0.origin == a.id })
        let late = try group.add("late")
        let pulled = try late.store.pull(from: group.folder, key: late.key, prune: false)
        #expect(try late.tables() == b.tables(), "\(pulled.warnings)")
    }

    /// One of a replica's own bundles is lost from the middle of its numbers (not pruned: a member
    /// lags, so no snapshot holds it): the next push carries all of its own transactions again, so
    /// that a reader that lacked the lost one applies it, and only once.
    @Test func aReplicaWhoseOwnBundleWasLostCarriesItsTransactionsAgainOnce() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b) = (group["a"], group["b"])
        for i in 1...3 {
            _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a\(i)', 'a')")
            try group.push("a")
        }
        let bundles = ExchangeGroup.bundles(in: group.folder, of: a)
        try #require(bundles.count == 3)
        try FileManager.default.removeItem(atPath: bundles[1])
        let again = try #require(try group.push("a").path, "a carries what the lost file held again")
        #expect(try ExchangeGroup.header(of: again).since[a.id] == 0)
        let pulled = try group.pull("b", prune: false)
        #expect(try b.tables() == a.tables(), "\(pulled.warnings)")
        #expect(try group.push("a").path == nil, "nothing new")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a4', 'a')")
        let next = try #require(try group.push("a").path)
        #expect(try ExchangeGroup.header(of: next).since[a.id] == 3, "only the new transaction")
        _ = try group.pull("b", prune: false)
        #expect(try b.tables() == a.tables())
    }

    /// A peer's snapshot provides its transactions only to replicas that catch up from it; one
    /// that follows the peer's bundles gets only what they carry. A push that counted on the
    /// snapshot for a transaction no bundle carries yet made a bundle such a replica could not
    /// apply (found by `tidemark-crash --seed 6125936992089890150`, where two such bundles waited
    /// on each other).
    @Test func aPushRelaysWhatAPeersSnapshotHoldsButNoneOfItsBundlesCarries() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'a')")
        try group.round(prune: false)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a2', 'a')")
        try group.push("a")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a3', 'a')")
        // Everyone applied a's first bundle: a's prune removes it and writes a snapshot through a3,
        // which no bundle of a's carries.
        try group.pull("a", prune: false)
        #expect(try !group.prune("a").removedFiles.isEmpty)
        #expect(ExchangeGroup.bundles(in: group.folder, of: a).count == 1)
        // c receives a3 outside the folder, writes, and pushes.
        let direct = group.directory.file("a-to-c.tmb")
        _ = try a.export(since: try c.store.currentToken(), to: direct)
        _ = try c.store.importBundle(at: direct)
        _ = try c.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c1', 'c')")
        let pushed = try #require(try group.push("c").path)
        #expect(try ExchangeGroup.header(of: pushed).ranges.contains { $0.origin == a.id }, "c relays a3")
        // b follows a's bundles and gets c's write (and a3) without a's snapshot.
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(try b.tables() == c.tables())
    }

    /// A replica caught up by a snapshot holds some of another origin's transactions only as row
    /// state: its next bundle assumes them, and a reader that lacks them must catch up from its
    /// snapshot, so the push writes one first (found by `tidemark-crash --seed
    /// 6125936992089890150`: the reader waited on a bundle that in turn waited on it).
    @Test func aPushBuildingOnTransactionsNoFileProvidesWritesASnapshotFirst() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'a')")
        try group.round(prune: false)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a2', 'a')")
        // c catches up from a's snapshot, handed over outside the folder: it holds a2 as row state.
        let direct = group.directory.file("a-snapshot.tms")
        _ = try a.store.exportSnapshot(to: direct, key: a.key)
        _ = try c.store.importBundle(at: direct)
        _ = try c.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c1', 'c')")
        let pushed = try group.push("c")
        #expect(pushed.snapshot == group.folder(of: "c") + "/snapshot.tms")
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(try b.tables() == c.tables())
        // a's next bundle builds on c1, which c's files provide: the folder stays followable.
        try group.round(prune: false)
        #expect(try group.tableDifferences() == [])
        #expect(try group.push("c").snapshot == nil, "no snapshot while the files provide what a push assumes")
    }
}

extension ExchangeGroup {
    /// The numbered bundles `replica` published in `folder`.
    static func bundles(in folder: String, of replica: TestReplica) -> [String] {
        let path = folder + "/" + replica.id.description
        return ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".tmb") }
            .sorted().map { path + "/" + $0 }
    }
}
