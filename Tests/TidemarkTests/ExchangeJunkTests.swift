import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// Junk in an exchange folder (Protocol/exchange.md §6.5): copies a sync tool made of a replica's
/// files, and files it put back damaged under their final name. Peers report each once while it is
/// unchanged; its owner removes it once it has checked that it does not need it.
@Suite struct ExchangeJunkTests {
    typealias Group = FolderExchangeTests.Group

    /// A copy of `source` at `name` in `replica`'s folder, as a sync tool leaves it.
    static func copy(_ source: String, as name: String, in group: Group, of replica: TestReplica) throws -> String {
        let path = group.folder(of: replica) + "/" + name
        try FileManager.default.copyItem(atPath: source, toPath: path)
        return path
    }

    /// Cuts the file at `path` to `keep` of its bytes, as an interrupted copy leaves it.
    static func truncate(_ path: String, keeping keep: Double) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(Int(Double(bytes.count) * keep)).write(to: URL(fileURLWithPath: path))
    }

    static func junkWarnings(_ summary: Store.PullSummary, naming paths: [String]) -> [String] {
        summary.warnings.filter { warning in paths.contains { warning.contains($0) } }
    }

    @Test func conflictCopiesAreReportedOnceByPeersAndRemovedByTheirOwner() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        let first = try #require(try group.push(a).path)
        try group.pull(a)
        let bundleCopy = try Self.copy(first, as: "0000000001 (1).tmb", in: group, of: a)
        let watermarkCopy = try Self.copy(
            group.folder(of: a) + "/watermark.tmw", as: "watermark.sync-conflict-20261123-101500-ABCDEFG.tmw",
            in: group, of: a)
        let junk = [bundleCopy, watermarkCopy]

        let firstPull = try group.pull(b)
        #expect(firstPull.imported.map(\.path) == [first])
        let reported = Self.junkWarnings(firstPull, naming: junk)
        #expect(reported.count == 2, "\(firstPull.warnings)")
        #expect(reported.allSatisfy { $0.contains("not a Tidemark exchange file") }, "\(reported)")
        #expect(reported.allSatisfy { $0.hasSuffix("(said once while the file is unchanged)") }, "\(reported)")

        let secondPull = try group.pull(b)
        #expect(secondPull.warnings.isEmpty, "junk is reported once: \(secondPull.warnings)")
        // The same folder spelled otherwise is the same folder: nothing is said again.
        let respelled = try b.store.pull(from: group.exchange + "/./", key: b.key)
        #expect(respelled.warnings.isEmpty, "junk is reported once: \(respelled.warnings)")

        // A file that changes is a new file: reported again.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: bundleCopy))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        let thirdPull = try group.pull(b)
        #expect(Self.junkWarnings(thirdPull, naming: [bundleCopy]).count == 1, "\(thirdPull.warnings)")

        // Its owner checks them (copies of what its store holds, once altered) and removes them.
        let tidied = try group.pull(a)
        #expect(tidied.removed.count == 2, "\(tidied.removed)")
        #expect(tidied.removed.contains { $0.hasPrefix(bundleCopy + ": ") }, "\(tidied.removed)")
        #expect(
            tidied.removed.contains { $0 == watermarkCopy + ": an older copy of this replica's watermark" },
            "\(tidied.removed)")
        #expect(junk.allSatisfy { !FileManager.default.fileExists(atPath: $0) })
        let afterTidy = try group.pull(b)
        #expect(afterTidy.warnings.isEmpty, "\(afterTidy.warnings)")
    }

    /// A sync tool puts back a copy of a published bundle cut short: peers that lack it report it
    /// once and do not read it again; its owner's next push finds it, removes it, and carries what
    /// it held again, so peers converge.
    @Test func aDamagedBundleUnderItsFinalNameIsReplacedByItsOwnersNextPush() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        for n in 1...40 {
            _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-\(n)', 'value \(n)')")
        }
        let first = try #require(try group.push(a).path)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-41', 'later')")
        let second = try #require(try group.push(a).path)
        try Self.truncate(first, keeping: 0.6)

        let firstPull = try group.pull(b)
        #expect(firstPull.imported.isEmpty)
        #expect(Self.junkWarnings(firstPull, naming: [first]).count == 1, "\(firstPull.warnings)")
        // The bundle after it waits for what it held: said once too, naming the damaged file.
        let waiting = Self.junkWarnings(firstPull, naming: [second])
        #expect(
            waiting.count == 1 && waiting[0].contains("it waits for what 0000000001.tmb held, which is damaged"),
            "\(firstPull.warnings)")
        let secondPull = try group.pull(b)
        #expect(secondPull.warnings.isEmpty, "reported once: \(secondPull.warnings)")

        let pushed = try group.push(a)
        #expect(pushed.removed.count == 1 && pushed.removed[0].hasPrefix(first + ": damaged"), "\(pushed.removed)")
        #expect(!FileManager.default.fileExists(atPath: first))
        #expect(FileManager.default.fileExists(atPath: second), "sound bundles stay")
        let third = try #require(pushed.path, "the push carries what the damaged bundle held")
        #expect(pushed.export?.through[a.id] == 41)

        let caughtUp = try group.pull(b)
        #expect(caughtUp.imported.map(\.path).contains(third), "\(caughtUp.imported.map(\.path))")
        #expect(caughtUp.warnings.isEmpty, "\(caughtUp.warnings)")
        let differences = try b.tables().differences(from: try a.tables(), mine: "b", theirs: "a")
        #expect(differences.isEmpty, "\(differences)")

        // Checked once: the next push neither reads nor removes anything.
        let quiet = try group.push(a)
        #expect(quiet.removed.isEmpty && quiet.path == nil, "\(quiet.removed)")
    }

    /// A copier that makes the file at its final size, writes the bytes in, and sets the
    /// modification time back leaves a file a pull first finds damaged (zeros), then sound with the
    /// same size and time: it is read again, and applied.
    @Test func aDamagedBundleWrittenInPlaceWithTheSameSizeAndTimeIsReadAgain() throws {
        let group = try Group()
        let (a, b) = (group.replicas[0], group.replicas[1])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        let path = try #require(try group.push(a).path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let time = try #require(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
        try Data(count: bytes.count).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: path)
        let damaged = try group.pull(b)
        #expect(damaged.imported.isEmpty)
        #expect(Self.junkWarnings(damaged, naming: [path]).count == 1, "\(damaged.warnings)")
        Thread.sleep(forTimeInterval: 0.05)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.write(contentsOf: bytes)
        try handle.close()
        try FileManager.default.setAttributes([.modificationDate: time], ofItemAtPath: path)
        let sound = try group.pull(b)
        #expect(sound.imported.map(\.path) == [path], "\(sound.warnings)")
        #expect(try b.tables() == a.tables())
    }

    /// Another replica's bundle that builds on what a damaged bundle held waits for it too: it is
    /// said once, naming the damaged file, and not again while the files are unchanged.
    @Test func aBundleOfAnotherReplicaWaitingForADamagedOneIsReportedOnce() throws {
        let group = try Group(["a", "b", "c"])
        let (a, b, c) = (group.replicas[0], group.replicas[1], group.replicas[2])
        for n in 1...40 {
            _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-\(n)', 'value \(n)')")
        }
        let first = try #require(try group.push(a).path)
        try group.pull(b)
        _ = try b.store.execute(sql: "UPDATE items SET name = 'seen by b' WHERE id = 'a-1'")
        let built = try #require(try group.push(b).path)
        try Self.truncate(first, keeping: 0.6)

        let firstPull = try group.pull(c)
        let waiting = Self.junkWarnings(firstPull, naming: [built])
        #expect(
            waiting.count == 1
                && waiting[0].contains("it waits for what \(a.id)/0000000001.tmb held, which is damaged"),
            "\(firstPull.warnings)")
        let secondPull = try group.pull(c)
        #expect(secondPull.warnings.isEmpty, "reported once: \(secondPull.warnings)")
        let pushed = try group.push(a)
        let caughtUp = try group.pull(c)
        #expect(try c.tables() == b.tables(), "\(pushed.removed) \(caughtUp.warnings) \(caughtUp.imported.map(\.path))")
    }

    /// A copy signed by this replica that holds transactions its store lacks (written by a copy
    /// of the store that was later discarded) is not junk to it: kept, and said once.
    @Test func aCopyHoldingTransactionsTheStoreLacksIsKept() async throws {
        let group = try Group()
        let a = group.replicas[0]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try group.push(a)
        let twin = group.directory.file("a-twin.db")
        try await SQLiteShell.execute(a.path, ".backup '\(twin)'")
        try FileManager.default.copyItem(
            atPath: KeyFile.defaultPath(forStore: a.path), toPath: KeyFile.defaultPath(forStore: twin))
        let copyOfA = try TestReplica(opening: twin)
        _ = try copyOfA.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'only in the copy')")
        let exported = try copyOfA.export(to: group.directory.file("twin.tmb")).path
        let kept = try Self.copy(exported, as: "0000000002 (1).tmb", in: group, of: a)

        let firstPush = try group.push(a)
        #expect(firstPush.removed.isEmpty, "\(firstPush.removed)")
        #expect(
            firstPush.warnings.count == 1 && firstPush.warnings[0].hasPrefix(kept + ": kept"), "\(firstPush.warnings)")
        #expect(FileManager.default.fileExists(atPath: kept))
        let secondPush = try group.push(a)
        #expect(secondPush.warnings.isEmpty, "said once: \(secondPush.warnings)")
        #expect(FileManager.default.fileExists(atPath: kept))
    }
}
