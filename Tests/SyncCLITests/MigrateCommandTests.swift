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
        try
            "ALTER TABLE items ADD COLUMN color TEXT DEFAULT 'none'; CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT);"
            .write(toFile: file, atomically: false, encoding: .utf8)
        let migrated = try await store.sync(
            "migrate", "--track", "notes", "--preserve", "items.name", "--preserve", "items.color", file)
        #expect(migrated.exitCode == 0 && migrated.stderr.isEmpty, "\(migrated)")
        #expect(
            migrated.stdoutLines.dropLast() == ["added items: color", "tracking notes", "preserving changed for items"])
        let version = try #require(migrated.stdoutLines.last)
        #expect(
            version.hasPrefix("schema is now v1 ") && version.count == "schema is now v1 ".count + 12, "\(migrated)")
        let json = try await store.sync("status", "--json")
        let schema = try #require(
            (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["schema"]
                as? [String: Any])
        #expect(schema["position"] as? Int == 1)
        let current = try #require(schema["version"] as? [String: Any])
        #expect((current["id"] as? String)?.hasPrefix(String(version.suffix(12))) == true, "\(json)")
        #expect(
            current["change"] as? String == "track table notes(body, id) key(id); add column items.color", "\(json)")
        try await store.exec("UPDATE items SET color = 'red' WHERE id = 'i1'; INSERT INTO notes VALUES ('n1', 'hi')")
        let log = try await store.sync("log")
        #expect(log.stdout.contains("update items [id='i1'] color='red'"), "\(log)")
        #expect(log.stdout.contains("insert notes [id='n1'] body='hi'"), "\(log)")
        let status = try await store.sync("status")
        #expect(status.stdoutLines.contains("table    items key(id) preserve(name, color)"), "\(status)")

        let refused = try await store.sync("migrate", store.directory.file("missing.sql"))
        expectFailure(refused, "cannot read")
        let keyChange = store.directory.file("key.sql")
        try "ALTER TABLE items RENAME COLUMN id TO ident;".write(toFile: keyChange, atomically: false, encoding: .utf8)
        let before = try await store.dump()
        expectFailure(
            try await store.sync("migrate", keyChange), "migration refused, nothing was changed: tracked table 'items'")
        #expect(try await store.dump() == before)
    }

    @Test func alterTableThroughExecIsRefusedAndThroughTheShellAdopted() async throws {
        let store = try await CLIStore()
        let before = try await store.dump()
        let refused = try await store.sync("exec", "ALTER TABLE items ADD COLUMN c")
        expectFailure(
            refused, "changes the schema of a tracked table; nothing was changed",
            hint: "sync migrate --store STORE FILE.sql")
        #expect(try await store.dump() == before)
        #expect(try await store.sync("status").exitCode == 0)
        // SQLite checks the capture triggers against a dropped column before anything changes.
        expectFailure(
            try await store.sync("exec", "ALTER TABLE items DROP COLUMN name"),
            "changes the schema of a tracked table; nothing was changed", hint: "sync migrate --store STORE FILE.sql")
        #expect(try await store.dump() == before)

        let shell = try await SQLiteShell.run(store.path, "ALTER TABLE items ADD COLUMN c TEXT")
        #expect(shell.exitCode == 0, "\(shell)")
        let status = try await store.sync("status")
        #expect(status.exitCode == 0, "\(status)")
        #expect(status.stderrLines.count == 1, "\(status)")
        #expect(
            status.stderrLines.first?.hasPrefix(
                "note: adopted a schema change made outside Tidemark as a migration (schema v1 ") == true, "\(status)")
        #expect(status.stderrLines.first?.hasSuffix("): added items: c") == true, "\(status)")
        #expect(
            status.stdoutLines.contains { $0.hasPrefix("schema   v1 ") && $0.hasSuffix("(add column items.c)") },
            "\(status)")
        try await store.exec("INSERT INTO items(id, c) VALUES ('x', 'see')")
        let again = try await store.sync("log")
        #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again)")
        #expect(again.stdout.contains("c='see'"), "\(again)")
    }

    /// Changes from the shell that no migration can be inferred from (a tracked table dropped,
    /// or rebuilt with its key made a rowid) leave a store every command refuses, naming the
    /// migration that adopts them; before, not even that migration could open the store. After it
    /// the store is usable again, and its history stays.
    @Test func shellChangesNoMigrationFollowsAreAdoptedByTheMigrationTheErrorNames() async throws {
        for (change, why) in [
            ("DROP TABLE items", "it was dropped"),
            (
                "CREATE TABLE i2(id INTEGER PRIMARY KEY, name TEXT, qty INTEGER); INSERT INTO i2(id, name) SELECT id, name FROM items; DROP TABLE items; ALTER TABLE i2 RENAME TO items",
                "its key 'id' is an INTEGER PRIMARY KEY"
            ),
        ] {
            let store = try await CLIStore()
            try await store.exec("INSERT INTO items(id, name) VALUES ('1', 'one')")
            let shell = try await SQLiteShell.run(store.path, change)
            #expect(shell.exitCode == 0, "\(shell)")
            for command in ["status", "log", "exec"] {
                let refused = try await store.sync(command, command == "exec" ? "SELECT 1" : "--json")
                expectFailure(
                    refused, "tracked table 'items' changed shape since tracking began",
                    hint: "`sync migrate --store STORE --untrack items`")
                #expect(refused.stderr.contains(why), "\(refused)")
            }
            let migrated = try await store.sync("migrate", "--untrack", "items")
            #expect(migrated.exitCode == 0, "\(migrated)")
            #expect(migrated.stdoutLines.first == "no longer tracking items", "\(migrated)")
            for command in ["status", "log", "token"] {
                let result = try await store.sync(command)
                #expect(result.exitCode == 0 && result.stderr.isEmpty, "\(command): \(result)")
            }
            #expect(try await store.sync("log").stdout.contains("insert items [id='1'] name='one'"), "history stays")
        }
    }

    /// A migration that changes tracking and writes rows (a backfill of the column it adds) says
    /// both: what it wrote is not history.
    @Test func aMigrationThatChangesTrackingAndWritesRowsSaysTheRowsAreNotHistory() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id, name) VALUES ('1', 'one')")
        let file = store.directory.file("m.sql")
        try "ALTER TABLE items ADD COLUMN w TEXT; UPDATE items SET w = 'backfilled';".write(
            toFile: file, atomically: true, encoding: .utf8)
        let result = try await store.sync("migrate", file)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdoutLines.first == "added items: w", "\(result)")
        #expect(result.stdoutLines.dropFirst().first?.hasPrefix("schema is now v1 ") == true, "\(result)")
        #expect(
            result.stdoutLines.last
                == "the migration wrote rows: what it wrote to tables tracked before it is not history, and other "
                + "replicas have it only by making the same migration", "\(result)")
        #expect(result.stdoutLines.count == 3, "\(result)")
    }

    /// A migration that changes nothing says so; one that changes only what is not tracked says
    /// that; one that only writes rows says they are not history.
    @Test func aMigrationSaysWhetherItChangedTheSchema() async throws {
        let store = try await CLIStore()
        let file = store.directory.file("m.sql")
        for (sql, said) in [
            ("-- nothing yet", "nothing changed"),
            ("CREATE INDEX items_by_name ON items(name);", "schema changed; tracking unchanged"),
            (
                "INSERT INTO items(id, name) VALUES ('m', 'by the migration');",
                "schema unchanged; the migration wrote rows, which are not history: other replicas have them only by "
                    + "making the same migration (`sync exec` writes rows that replicate)"
            ),
        ] {
            try sql.write(toFile: file, atomically: true, encoding: .utf8)
            let result = try await store.sync("migrate", file)
            #expect(result.exitCode == 0 && result.stdoutLines == [said], "\(result)")
        }
    }

    /// A version that tracks a table of 250 columns is named in a line of readable length; the
    /// JSON gives the change whole.
    @Test func aWideTablesVersionIsClippedInLinesAndWholeInJSON() async throws {
        let store = try await CLIStore()
        let columns = (1...249).map { "c\($0) TEXT" }.joined(separator: ", ")
        let file = store.directory.file("wide.sql")
        try "CREATE TABLE wide(id TEXT PRIMARY KEY, \(columns));".write(toFile: file, atomically: true, encoding: .utf8)
        let migrated = try await store.sync("migrate", "--track", "wide", file)
        #expect(migrated.exitCode == 0, "\(migrated)")
        let status = try await store.sync("status")
        let line = try #require(status.stdoutLines.first { $0.hasPrefix("schema ") })
        #expect(line.count < 300 && line.hasSuffix("…)"), "\(line)")
        let json = try #require(try await store.status()["schema"] as? [String: Any])
        let change = try #require((json["version"] as? [String: Any])?["change"] as? String)
        #expect(change.contains("c249"), "\(change.suffix(80))")
    }

    /// A migration's SQL may not write Tidemark's own tables and triggers, as `exec`'s may not:
    /// history erased, a bookkeeping table dropped, or a trigger that throws captured changes away
    /// would each leave a store that syncs wrong or not at all.
    @Test func migrateRefusesSQLThatWritesTidemarksObjects() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('1')")
        let before = try await store.dump()
        let file = store.directory.file("m.sql")
        for sql in [
            "DELETE FROM tidemark_changes;", "DROP TABLE tidemark_transactions;",
            "CREATE TRIGGER t AFTER INSERT ON tidemark_changes BEGIN DELETE FROM tidemark_changes; END;",
            "ALTER TABLE items ADD COLUMN c TEXT; ALTER TABLE items RENAME TO tidemark_items;",
        ] {
            try sql.write(toFile: file, atomically: true, encoding: .utf8)
            expectFailure(try await store.sync("migrate", file), "touches Tidemark's bookkeeping ('tidemark_")
            #expect(try await store.dump() == before, "\(sql)")
        }
        #expect(try await store.sync("status").exitCode == 0)
    }

    /// A capture trigger is Tidemark's own: `exec` refuses to drop it, and one the shell dropped
    /// (or a rebuild of the table lost) is put back by the next command, which says so.
    @Test func captureTriggersDroppedThroughExecAreRefusedAndThroughTheShellPutBack() async throws {
        let store = try await CLIStore()
        let before = try await store.dump()
        let refused = try await store.sync(
            "exec", "DROP TRIGGER tidemark_1_insert; INSERT INTO items(id) VALUES ('x'); SELECT 1")
        expectFailure(
            refused, "touches Tidemark's bookkeeping ('tidemark_1_insert'); nothing was changed",
            hint: "change tracked tables with `sync migrate`")
        #expect(try await store.dump() == before)

        let shell = try await SQLiteShell.run(
            store.path, "DROP TRIGGER tidemark_1_insert; INSERT INTO items(id, name) VALUES ('unseen', 'u')")
        #expect(shell.exitCode == 0, "\(shell)")
        let status = try await store.sync("status")
        #expect(status.exitCode == 0, "\(status)")
        #expect(
            status.stderrLines == [
                "warning: the capture triggers of table 'items' were missing (removed by another client, or lost with a "
                    + "rebuild of the table); they are back, but writes made to it meanwhile were not recorded and will "
                    + "not replicate: `sync status` shows whether peers hold other rows"
            ], "\(status)")
        #expect(try await store.sync("status").stderr.isEmpty, "put back once")
        let written = try await SQLiteShell.run(store.path, "INSERT INTO items(id, name) VALUES ('seen', 's')")
        #expect(written.exitCode == 0, "\(written)")
        let log = try await store.sync("log")
        #expect(log.stdout.contains("insert items [id='seen'] name='s'"), "\(log)")
        #expect(!log.stdout.contains("unseen"), "written while the trigger was missing: \(log)")
    }

    @Test func migrateRenamesDropsAndUntracksAndSaysSo() async throws {
        let store = try await CLIStore()
        try await store.exec(
            "INSERT INTO items(id, name, qty, note) VALUES ('i1', 'one', 1, 'n'); INSERT INTO tags VALUES ('i1', 't', 2)"
        )
        let file = store.directory.file("v2.sql")
        try "ALTER TABLE items RENAME COLUMN qty TO quantity; ALTER TABLE items RENAME TO things; DROP TABLE tags;"
            .write(toFile: file, atomically: false, encoding: .utf8)
        let migrated = try await store.sync("migrate", "--untrack", "tags", file)
        #expect(migrated.exitCode == 0 && migrated.stderr.isEmpty, "\(migrated)")
        #expect(
            migrated.stdoutLines.dropLast() == [
                "renamed table items to things", "renamed things.qty to quantity", "no longer tracking tags",
            ])
        let status = try await store.sync("status")
        #expect(
            status.stdoutLines.contains {
                $0.hasPrefix("schema   v1 ") && $0.contains("rename column items.qty to quantity")
            }, "\(status)")
        #expect(!status.stdout.contains("table    tags"), "\(status)")
        try await store.exec("UPDATE things SET quantity = 5")
        let log = try await store.sync("log")
        #expect(log.stdout.contains("update things [id='i1'] quantity=5"), "\(log)")
        #expect(log.stdout.contains("insert items [id='i1']"), "history keeps the names it was written with: \(log)")

        let dropFile = store.directory.file("v3.sql")
        try "ALTER TABLE things DROP COLUMN note;".write(toFile: dropFile, atomically: false, encoding: .utf8)
        let dropped = try await store.sync("migrate", dropFile)
        #expect(dropped.exitCode == 0, "\(dropped)")
        #expect(dropped.stdoutLines.first == "dropped things: note", "\(dropped)")

        let before = try await store.dump()
        expectFailure(
            try await store.sync("migrate", "--untrack", "tags"),
            "table 'tags' is not tracked, so it cannot be untracked")
        #expect(try await store.dump() == before)
        let both = try await store.sync("migrate", "--track", "things", "--untrack", "things")
        #expect(both.exitCode != 0 && both.stderr.contains("both in --track and --untrack"), "\(both)")
    }

    /// A replica that joins from a snapshot written under a schema version it has not made holds
    /// the snapshot and says so, as `import` and `pull` do, rather than "imported 0 rows"; once it
    /// makes the migration, importing the snapshot again brings it the rows.
    /// Two members that made different migrations from one version: `status` lists the fork and
    /// says of the member that it is forked, not that it is up to date; a migration that would fork
    /// from a held bundle is refused.
    @Test func aForkedMemberIsSaidToBeForked() async throws {
        let group = try await PruneCommandTests.Group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        let color = a.directory.file("color.sql")
        try "ALTER TABLE items ADD COLUMN color TEXT;".write(toFile: color, atomically: false, encoding: .utf8)
        let size = b.directory.file("size.sql")
        try "ALTER TABLE items ADD COLUMN size TEXT;".write(toFile: size, atomically: false, encoding: .utf8)
        #expect(try await a.sync("migrate", color).exitCode == 0)
        try await a.exec("INSERT INTO items(id, name, color) VALUES ('i1', 'one', 'red')")
        try await group.push("a")
        _ = try await b.sync("pull", "--from", group.folder)
        let refused = try await b.sync("migrate", size)
        expectFailure(refused, "migration refused, nothing was changed: it makes schema v1 ", hint: "`sync status`")
        #expect(refused.errorLines.first?.contains("the store would fork from that peer for good") == true)

        // Made from another client, the change is adopted all the same: b has forked from a.
        try await SQLiteShell.execute(b.path, "ALTER TABLE items ADD COLUMN size TEXT;")
        _ = try await b.sync("pull", "--from", group.folder)
        let status = try await b.sync("status")
        #expect(status.stdoutLines.contains { $0.hasPrefix("fork     a made schema v1 ") }, "\(status)")
        let member = try #require(status.stdoutLines.first { $0.hasPrefix("member   a") })
        #expect(
            member.hasPrefix("member   a: forked (see `fork` above), applies none of this store's changes"), "\(member)"
        )
    }

    /// A store created from the app's newer schema takes the group's version on with its first
    /// pull, and says so.
    @Test func aPullThatTakesAVersionOnSaysSo() async throws {
        let group = try await PruneCommandTests.Group(["a"])
        let a = group["a"]
        let migration = a.directory.file("color.sql")
        try "ALTER TABLE items ADD COLUMN color TEXT;".write(toFile: migration, atomically: false, encoding: .utf8)
        #expect(try await a.sync("migrate", migration).exitCode == 0)
        try await a.exec("INSERT INTO items(id, name, color) VALUES ('i1', 'one', 'red')")
        try await group.push("a")
        let newer = CLIStore.schema.replacingOccurrences(of: "note);", with: "note, color TEXT);")
        let d = try await CLIStore(replica: "d", schema: newer)
        try await d.trust(a, as: "a")
        let pulled = try await d.sync("pull", "--from", group.folder)
        #expect(pulled.exitCode == 0 && pulled.stderr.isEmpty, "\(pulled)")
        let line = try #require(pulled.stdoutLines.first { $0.hasPrefix("took on schema v1 ") }, "\(pulled)")
        #expect(line.hasSuffix("(add column items.color), which this store's tables already had"), "\(line)")
        // One that pushes first takes it on then, and says so.
        let e = try await CLIStore(replica: "e", schema: newer)
        try await e.trust(a, as: "a")
        try await e.exec("INSERT INTO items(id, name, color) VALUES ('e1', 'from e', 'blue')")
        let pushed = try await e.sync("push", "--to", group.folder)
        #expect(pushed.exitCode == 0 && pushed.stderr.isEmpty, "\(pushed)")
        #expect(pushed.stdoutLines.contains(line), "\(pushed)")
    }

    @Test func aJoinFromASnapshotOfANewerSchemaSaysItIsHeld() async throws {
        let group = try await PruneCommandTests.Group(["a", "b"])
        let migration = group["a"].directory.file("v2.sql")
        try "ALTER TABLE items ADD COLUMN color TEXT;".write(toFile: migration, atomically: false, encoding: .utf8)
        for name in ["a", "b"] {
            let migrated = try await group[name].sync("migrate", migration)
            #expect(migrated.exitCode == 0, "\(migrated)")
        }
        try await group["a"].exec("INSERT INTO items(id, name, color) VALUES ('i1', 'one', 'red')")
        try await group.round(["a", "b"])
        try await group.round(["a", "b"])
        let snapshot = try #require(
            try await [group.subfolder(of: "a"), group.subfolder(of: "b")].map { $0 + "/snapshot.tms" }.first {
                FileManager.default.fileExists(atPath: $0)
            })

        let directory = try TemporaryDirectory("tidemark-cli-join")
        let path = directory.file("d.db")
        let joined = try await SyncProcess.run([
            "init", "--store", path, "--replica", "d", "--schema", group["a"].schemaFile, "--preserve", "items.name",
            "--from", snapshot,
        ])
        #expect(joined.exitCode == 0 && joined.stderr.isEmpty, "\(joined)")
        let held = try #require(joined.stdoutLines.last)
        #expect(held.hasPrefix("its snapshot is held, not applied: written under schema v1 "), "\(joined)")
        #expect(
            held.hasSuffix(
                "(add column items.color), which this store has not made; make that migration (sync migrate), "
                    + "then pull or import it again"), "\(joined)")
        let status = try await SyncProcess.run(["status", "--store", path])
        #expect(status.stdoutLines.contains { $0.hasPrefix("waiting  for schema v1 ") }, "\(status)")

        #expect(try await SyncProcess.run(["migrate", "--store", path, migration]).exitCode == 0)
        let imported = try await SyncProcess.run(["import", "--store", path, snapshot])
        #expect(imported.exitCode == 0 && imported.stderr.isEmpty, "\(imported)")
        #expect(try StoreSnapshot.trackedTables(of: path) == (try group["a"].tables()), "\(imported)")
    }
}
