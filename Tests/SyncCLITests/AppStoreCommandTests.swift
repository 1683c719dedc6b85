import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync status`, `log`, `push` and `pull` on a store an app created through its own GRDB
/// `DatabasePool`, while the app holds it open and observes it.
@Suite struct AppStoreCommandTests {
    @Test func commandsWorkOnAStoreTheAppCreatedAndHoldsOpen() async throws {
        let directory = try TemporaryDirectory("tidemark-app-cli")
        let path = directory.file("app.sqlite")
        let folder = directory.file("exchange")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let schema = "CREATE TABLE notes(id TEXT PRIMARY KEY, title TEXT);"
        let pool = try DatabasePool(path: path)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.execute(sql: schema) }
        try migrator.migrate(pool)
        let app = try Store.initialize(in: pool, setup: Store.Setup(replicaName: "app")).store
        try await pool.write { db in
            try app.setTransactionAuthor("ana", contextName: "editor", in: db)
            try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'by ana')")
        }

        let status = try await SyncProcess.run(["status", "--store", path])
        #expect(status.exitCode == 0 && status.stderr.isEmpty, "\(status)")
        #expect(status.stdoutLines.contains("table    notes key(id)"), "\(status)")
        #expect(!status.stdout.contains("grdb_migrations"), "GRDB's own table is not tracked")

        let log = try await SyncProcess.run(["log", "--store", path])
        #expect(log.exitCode == 0, "\(log)")
        let authored = log.stdoutLines.filter { $0.contains("author=ana") }
        #expect(authored.count == 1 && authored[0].hasSuffix("author=ana  context=editor"), "\(log)")

        // A peer made with the CLI; both trust each other.
        let schemaFile = directory.file("schema.sql")
        try schema.write(toFile: schemaFile, atomically: false, encoding: .utf8)
        let peer = directory.file("peer.db")
        let created = try await SyncProcess.run(["init", "--store", peer, "--replica", "peer", "--schema", schemaFile])
        try #require(created.exitCode == 0, "\(created)")
        func key(_ store: String) async throws -> String {
            let identity = try await SyncProcess.run(["identity", "--store", store])
            return String(identity.stdoutLines.first?.split(separator: " ").last ?? "")
        }
        let appKey = try await key(path)
        let peerKey = try await key(peer)
        for (store, name, key) in [(path, "peer", peerKey), (peer, "app", appKey)] {
            let added = try await SyncProcess.run(["peers", "add", "--store", store, name, key])
            #expect(added.exitCode == 0, "\(added)")
        }

        let pushed = try await SyncProcess.run(["push", "--store", path, "--to", folder])
        #expect(pushed.exitCode == 0 && pushed.stderr.isEmpty, "\(pushed)")
        let peerPull = try await SyncProcess.run(["pull", "--store", peer, "--from", folder])
        #expect(peerPull.exitCode == 0 && peerPull.stderr.isEmpty, "\(peerPull)")
        let peerLog = try await SyncProcess.run(["exec", "--store", peer, "SELECT title FROM notes"])
        #expect(peerLog.stdout.contains("by ana"), "\(peerLog)")

        // The CLI pulls into the app's store while the app observes it through its pool. Another
        // process's commit reaches GRDB's observation by the file, not the connection: GRDB sees it
        // when the app next reads, so the test reads after the pull.
        let peerWrite = try await SyncProcess.run([
            "exec", "--store", peer, "INSERT INTO notes(id, title) VALUES ('p1', 'from peer')",
        ])
        #expect(peerWrite.exitCode == 0, "\(peerWrite)")
        #expect(try await SyncProcess.run(["push", "--store", peer, "--to", folder]).exitCode == 0)
        let pulled = try await SyncProcess.run(["pull", "--store", path, "--from", folder])
        #expect(pulled.exitCode == 0 && pulled.stderr.isEmpty, "\(pulled)")
        #expect(
            try await pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM notes ORDER BY id") } == [
                "n1", "p1",
            ])
        // The app's store is still usable through its writer.
        try await pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n2', 'after')") }
        #expect(try app.fetchHistory().last?.changes.first?.key.first?.value == .text("n2"))
    }

    /// The README's example (Examples/GRDBApp) runs and exits 0 only if its ValueObservation saw
    /// the row a pull brought.
    @Test func theReadmeExampleSeesAPullThroughItsObservation() async throws {
        let directory = try TemporaryDirectory("tidemark-example")
        let result = try await CommandRunner.run(
            SyncProcess.productsDirectory + "/tidemark-example-grdb", [directory.path],
            environment: SyncProcess.environment())
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdoutLines.last == "ok", "\(result)")
    }
}
