import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// Push and pull through a shared folder (Protocol/exchange.md): each replica writes numbered
/// bundles and its watermark into its own subfolder and applies everything it lacks from the others.
@Suite struct FolderExchangeTests {
    /// Replicas that trust each other and an empty exchange folder, all in one temporary directory.
    struct Group {
        let directory: TemporaryDirectory
        let exchange: String
        let replicas: [TestReplica]

        init(_ names: [String] = ["a", "b"]) throws {
            let directory = try TemporaryDirectory("tidemark-folder")
            self.directory = directory
            exchange = directory.file("exchange")
            try FileManager.default.createDirectory(atPath: exchange, withIntermediateDirectories: true)
            replicas = try names.map { try TestReplica($0, in: directory) }
            try TestReplica.trustEachOther(replicas)
        }

        /// A replica's subfolder.
        func folder(of replica: TestReplica) -> String { exchange + "/" + replica.id.description }

        @discardableResult
        func push(_ replica: TestReplica) throws -> Store.PushSummary {
            try replica.store.push(to: exchange, key: replica.key)
        }
        @discardableResult
        func pull(_ replica: TestReplica) throws -> Store.PullSummary {
            try replica.store.pull(from: exchange, key: replica.key)
        }
    }

    @Test func afterAPushAndAPullTheReceiverHoldsEverythingTheSenderHeldAtPushTime() async throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        try await ExchangeRoundTripTests.writeMix(a)
        let pushed = try group.push(a)
        #expect(pushed.path == group.folder(of: a) + "/0000000001.tmb")
        #expect(pushed.export?.transactionCount == 3)
        let transactionsAtPush = try a.transactions()
        let tablesAtPush = try a.tables()
        // Written after the push: not in the folder, so not expected at b.
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('late')")

        let pulled = try group.pull(b)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.map(\.appliedTransactions) == [3])
        #expect(pulled.watermark == group.folder(of: b) + "/watermark.tmw")
        // b holds them: its token covers a's at push time and every transaction b still keeps in its
        // history (a pull may prune what every member holds) is a's, unaltered.
        #expect(try b.store.currentToken().covers(try #require(pushed.export?.through)))
        #expect(Set(try b.transactions()).isSubset(of: Set(transactionsAtPush)))
        let differences = try b.tables().differences(from: tablesAtPush, mine: "b", theirs: "a at push time")
        #expect(differences.isEmpty, "\(differences)")
        #expect(try b.store.currentToken() == pushed.export?.through)
    }

    @Test func aPullSkipsWhatItAlreadyHas() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try group.push(a)
        _ = try a.store.execute(sql: "UPDATE items SET qty = 2 WHERE id = 'a-1'")
        try group.push(a)
        #expect(try group.pull(b).imported.count == 2)

        let before = try b.everything()
        let again = try group.pull(b)
        #expect(again.imported.isEmpty)
        #expect(again.warnings.isEmpty, "\(again.warnings)")
        let differences = try b.everything().differences(from: before, mine: "after", theirs: "before")
        #expect(differences.isEmpty, "a pull with nothing new changed the store: \(differences)")

        // b's next push may relay a's own transactions back (unless b pruned them): a applies only
        // what it lacks, b's own write, and its own rows and history are untouched.
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-1', 'from b')")
        try group.push(b)
        let aToken = try a.store.currentToken()
        let aRows = try a.tables()
        let back = try group.pull(a)
        #expect(back.warnings.isEmpty, "\(back.warnings)")
        #expect(back.imported.map(\.appliedTransactions).reduce(0, +) == 1)
        #expect(try a.store.currentToken()[a.id] == aToken[a.id])
        #expect(try a.tables().removing { $1.first == .text("b-1") } == aRows)
    }

    /// A bundle cut in half (as a cloud drive still copying it leaves it) and random bytes under a
    /// bundle name are reported and retried; they do not stop the other bundles.
    @Test func damagedFilesWarnWithoutBlockingTheOthers() throws {
        let group = try Group(["a", "b", "c"])
        let (a, b, c) = (group.replicas[0], group.replicas[1], group.replicas[2])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try group.push(a)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'two')")
        let second = try #require(try group.push(a).path)
        _ = try c.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c-1', 'from c')")
        try group.push(c)

        let full = try Data(contentsOf: URL(fileURLWithPath: second))
        try full.prefix(full.count / 2).write(to: URL(fileURLWithPath: second))
        let foreign = group.folder(of: c) + "/0000000009.tmb"
        var random = SeededGenerator(seed: 9)
        try Data((0..<700).map { _ in UInt8.random(in: 0...255, using: &random) }).write(
            to: URL(fileURLWithPath: foreign))

        let pulled = try group.pull(b)
        #expect(pulled.imported.map(\.sender).sorted() == ["a", "c"], "bundle 1 of a and bundle 1 of c are applied")
        #expect(pulled.warnings.count == 2, "\(pulled.warnings)")
        #expect(pulled.warnings.contains { $0.contains(second) }, "\(pulled.warnings)")
        #expect(pulled.warnings.contains { $0.contains(foreign) }, "\(pulled.warnings)")
        #expect(try b.store.currentToken()[a.id] == 1)
        #expect(try b.store.currentToken()[c.id] == 1)

        // The copy completes: the next pull applies it. The foreign file, unchanged, was reported
        // already (junk is reported once, Protocol/exchange.md §6.5).
        try full.write(to: URL(fileURLWithPath: second))
        let retried = try group.pull(b)
        #expect(retried.imported.map(\.path) == [second])
        #expect(retried.warnings.isEmpty, "\(retried.warnings)")
        #expect(try b.transactions().filter { $0.origin == a.id } == (try a.transactions()))
        #expect(try b.transactions().filter { $0.origin == c.id } == (try c.transactions()))
    }

    /// A writer's temporary file (`.tmp-…`, left by a push in progress or one that crashed) is
    /// reported, never applied, and does not stop the pull.
    @Test func aTemporaryFileIsReportedAndSkipped() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        let first = try #require(try group.push(a).path)
        let temporary = group.folder(of: a) + "/.tmp-xyz"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: first))
        try bytes.prefix(bytes.count / 3).write(to: URL(fileURLWithPath: temporary))

        let pulled = try group.pull(b)
        #expect(pulled.imported.map(\.path) == [first])
        #expect(
            pulled.warnings.contains { $0.contains(".tmp-xyz") },
            "no warning about the temporary file: \(pulled.warnings)")
        #expect(FileManager.default.fileExists(atPath: temporary), "another replica's file is left alone")
    }

    /// A temporary file left by a killed push is never taken for a bundle; once it has gone
    /// unwritten for `abandonedTemporaryAge`, peers say so and its owner removes it on its next
    /// push or pull. A temporary still being written (recently modified) is left alone.
    @Test func anAbandonedTemporaryIsRemovedByItsOwnerOnly() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try group.push(a)
        let abandoned = group.folder(of: a) + "/.tmp-killed"
        let live = group.folder(of: a) + "/.tmp-live"
        for path in [abandoned, live] { try Data("partial".utf8).write(to: URL(fileURLWithPath: path)) }
        let old = Date().addingTimeInterval(-(ExchangeFolder.abandonedTemporaryAge + 60))
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: abandoned)

        let pulled = try group.pull(b)
        #expect(
            pulled.warnings.contains { $0.contains(".tmp-killed") && $0.contains("left by an interrupted write") },
            "\(pulled.warnings)")
        #expect(
            pulled.warnings.contains { $0.contains(".tmp-live") && $0.contains("still being written") },
            "\(pulled.warnings)")
        #expect(FileManager.default.fileExists(atPath: abandoned), "a peer never removes another replica's files")

        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'two')")
        try group.push(a)
        #expect(!FileManager.default.fileExists(atPath: abandoned), "its owner's push removes the abandoned temporary")
        #expect(FileManager.default.fileExists(atPath: live), "a temporary still being written stays")
    }

    /// A folder that happens to carry a bundle's name is a foreign entry like any other: reported,
    /// not fatal to the pull.
    @Test func aFolderNamedLikeABundleDoesNotStopThePull() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        let first = try #require(try group.push(a).path)
        let strange = group.folder(of: a) + "/0000000005.tmb"
        try FileManager.default.createDirectory(atPath: strange, withIntermediateDirectories: true)

        let pulled: Store.PullSummary
        do {
            pulled = try group.pull(b)
        } catch {
            Issue.record("the pull failed: \(error)")
            return
        }
        #expect(pulled.imported.map(\.path) == [first])
        #expect(pulled.warnings.count == 1 && pulled.warnings[0].contains(strange), "\(pulled.warnings)")
    }

    @Test func eachReplicaWritesOnlyInsideItsOwnSubfolder() async throws {
        let group = try Group(["a", "b", "c"])
        var random = SeededGenerator(seed: 42)
        for round in 0..<4 {
            for replica in group.replicas.shuffled(using: &random) {
                _ = try replica.store.execute(
                    sql: "INSERT INTO items(id, qty) VALUES ('\(replica.name)-\(round)', \(round))")
                for operation in ["push", "pull"].shuffled(using: &random) {
                    let before = FolderTree(group.exchange)
                    if operation == "push" { try group.push(replica) } else { try group.pull(replica) }
                    let touched = FolderTree(group.exchange).touched(since: before)
                    let own = replica.id.description
                    let outside = touched.filter { $0 != own && !$0.hasPrefix(own + "/") }
                    #expect(outside.isEmpty, "\(replica.name) \(operation) touched \(outside)")
                    // A published bundle is never rewritten (a prune may remove it; only the watermark is replaced).
                    let after = FolderTree(group.exchange)
                    let rewritten = touched.filter {
                        before.entries[$0] != nil && after.entries[$0] != nil && $0.hasSuffix(".tmb")
                    }
                    #expect(rewritten.isEmpty, "\(replica.name) \(operation) rewrote \(rewritten)")
                }
            }
        }
        let tree = FolderTree(group.exchange)
        let folders = Set(tree.entries.filter(\.value.isDirectory).map(\.key))
        #expect(folders == Set(group.replicas.map(\.id.description)))
        for file in tree.files {
            let name = (file as NSString).lastPathComponent
            #expect(
                name == "watermark.tmw" || name == "snapshot.tms"
                    || name.range(of: "^[0-9]{10}\\.tmb$", options: .regularExpression) != nil, "unexpected \(file)")
        }
        for replica in group.replicas {
            #expect(tree.files.contains(replica.id.description + "/watermark.tmw"))
        }
    }

    /// Bundle numbers are never reused (Protocol/exchange.md §2.2), not even after a prune removed
    /// the bundles that had them: a reader that saw `0000000001.tmb` must never meet other content
    /// under that name.
    @Test func bundleNumbersAreNeverReusedAfterAPrune() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        var published: [String: Data] = [:]
        func record(_ summary: Store.PushSummary) throws {
            guard let path = summary.path else { return }
            let name = (path as NSString).lastPathComponent
            let content = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(
                published[name] == nil || published[name] == content, "\(name) was published again with other content")
            published[name] = content
        }
        for round in 1...3 {
            _ = try b.store.execute(sql: "INSERT INTO items(id) VALUES ('b-\(round)')")
            try record(try group.push(b))
            try group.pull(a)
            try group.pull(b)  // learns that a holds everything: may prune its own bundles
        }
        #expect(published.count == 3, "\(published.keys.sorted())")
        #expect(try a.store.currentToken()[b.id] == 3)
    }

    @Test func aPullLeavesASignedWatermarkThatPeersLearnFrom() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-1')")
        try group.push(a)
        let pulled = try group.pull(b)
        let path = group.folder(of: b) + "/watermark.tmw"
        #expect(pulled.watermark == path)

        var transactions = 0
        let verified = try Store.inspectBundle(at: path) { _, _ in transactions += 1 }
        #expect(verified.header.kind == .watermark)
        #expect(verified.sender == b.id)
        #expect(verified.header.senderName == "b")
        #expect(verified.header.through == (try b.store.currentToken()))
        #expect(verified.header.ranges.isEmpty)
        #expect(transactions == 0)

        // a learns what b holds from it, and an export for b then carries only what b lacks.
        #expect(try a.store.knownToken(ofPeer: "b") == .zero)
        _ = try group.pull(a)
        #expect(try a.store.knownToken(of: b.id) == (try b.store.currentToken()))
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-2')")
        let export = try a.export(since: try a.store.knownToken(ofPeer: "b"), to: group.directory.file("for-b.tmb"))
        #expect(export.transactionCount == 1)
    }
}
