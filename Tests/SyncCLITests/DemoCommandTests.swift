import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync demo`: three replicas sync a to-do list through one folder and agree.
@Suite struct DemoCommandTests {
    static let success = "ok        all 3 replicas hold the same rows"

    @Test func demoSyncsThreeReplicasAndSaysSo() async throws {
        let result = try await SyncProcess.run(["demo"])
        // It made its own temporary folder and named it on the first line: remove it afterwards.
        if let line = result.stdoutLines.first, line.hasPrefix("folder    "), line.hasSuffix("/exchange") {
            let folder = (String(line.dropFirst(10)) as NSString).deletingLastPathComponent
            if (folder as NSString).lastPathComponent.hasPrefix("tidemark-demo-") {
                try? FileManager.default.removeItem(atPath: folder)
            }
        }
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        #expect(result.stdoutLines.last == Self.success, "\(result)")
        #expect(!result.stdout.contains("warning"), "\(result)")
    }

    @Test func demoInAGivenFolderLeavesThreeStoresWithTheSameRows() async throws {
        let directory = try TemporaryDirectory("tidemark-cli-demo")
        let folder = directory.file("demo")
        let result = try await SyncProcess.run(["demo", "--dir", folder])
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdoutLines.first == "folder    \(folder)/exchange")
        #expect(result.stdoutLines.contains(Self.success), "\(result)")

        let stores = ["alice", "bob", "carol"].map { folder + "/\($0).db" }
        let snapshots = try stores.map { try StoreSnapshot.trackedTables(of: $0) }
        #expect(Set(snapshots[0].tables.map(\.name)).isSuperset(of: ["tags", "todos"]))
        #expect(snapshots[0]["todos"]?.rows.isEmpty == false)
        for (path, snapshot) in zip(stores.dropFirst(), snapshots.dropFirst()) {
            let differences = snapshots[0].differences(from: snapshot, mine: "alice", theirs: path)
            #expect(differences.isEmpty, "\(differences)")
        }
        // One subfolder per replica in the exchange folder, each with its watermark.
        let ids = try stores.map { Replica.ID(publicKey: try KeyFile.load($0 + ".key").publicKey).description }
        let tree = FolderTree(folder + "/exchange")
        #expect(Set(tree.entries.filter(\.value.isDirectory).map(\.key)) == Set(ids))
        for id in ids { #expect(tree.files.contains("\(id)/watermark.tmw"), "\(tree.files)") }
    }

    @Test func demoRefusesAFolderThatIsNotEmpty() async throws {
        let directory = try TemporaryDirectory("tidemark-cli-demo")
        try "keep me".write(toFile: directory.file("notes.txt"), atomically: false, encoding: .utf8)
        expectFailure(
            try await SyncProcess.run(["demo", "--dir", directory.path]),
            "invalid --dir '\(directory.path)': the folder is not empty")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["notes.txt"])
    }
}
