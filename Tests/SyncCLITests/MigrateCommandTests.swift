import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync migrate`, and schema changes through `sync exec` and the `sqlite3` shell: the store stays
/// usable by every command, and what happened is reported.
@Suite struct MigrateCommandTests {
    @Test func migrateAddsAColumnAndTracksANewTable() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id, name) VALUES ('i1', 'one')")
        let file = store.directory.file("v2.sql")
        try "ALTER TABLE items ADD COLUMN color TEXT DEFAULT 'none'; CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT);"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let migrated = try await store.sync("migrate", "--track", "notes", "--preserve", "items.name", "--preserve", "items.color", file)
        #expect(migrated.exitCode == 0 && migrated.stderr.isEmpty, "\(migrated)")
        #expect(migrated.stdoutLines == ["added items: color", "tracking notes", "preserving changed for items"])
        try await store.exec("UPDATE items SET color = 'red' WHERE id = 'i1'; INSERT INTO notes VALUES ('n1', 'hi')")
        let log = try await store.sync("log")
        #expect(log.stdout.contains("update items [id='i1'] color='red'"), "\(log)")
        #expect(log.stdout.contains("insert notes [id='n1'] body='hi'"), "\(log)")
        let status = try await store.sync("status")
        #expect(status.stdoutLines.contains("table    items key(id) preserve(name, color)"), "\(status)")

        let refused = try await store.sync("migrate", store.directory.file("missing.sql"))
        expectFailure(refused, "cannot read")
        let keyChange = store.directory.file("key.sql")
        try "ALTER TABLE items DROP COLUMN name;".write(toFile: keyChange, atomically: true, encoding: .utf8)
        let before = try await store.dump()
        expectFailure(try await store.sync("migrate", keyChange), "migration refused, nothing was changed: tracked table 'items'")
        #expect(try await store.dump() == before)
    }

    @Test func alterTableThroughExecIsRefusedAndThroughTheShellAdopted() async throws {
        let store = try await CLIStore()
        let before = try await store.dump()
        let refused = try await store.sync("exec", "ALTER TABLE items ADD COLUMN c")
        expectFailure(refused, "changes the schema of a tracked table; nothing was changed", hint: "sync migrate --store STORE FILE.sql")
        #expect(try await store.dump() == before)
        #expect(try await store.sync("status").exitCode == 0)

        let shell = try await SQLiteShell.run(store.path, "ALTER TABLE items ADD COLUMN c TEXT")
        #expect(shell.exitCode == 0, "\(shell)")
        let status = try await store.sync("status")
        #expect(status.exitCode == 0, "\(status)")
        #expect(status.stderrLines == ["note: adopted a schema change made outside Tidemark as a migration: added items: c"], "\(status)")
        try await store.exec("INSERT INTO items(id, c) VALUES ('x', 'see')")
        let again = try await store.sync("log")
        #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again)")
        #expect(again.stdout.contains("c='see'"), "\(again)")
    }
}
