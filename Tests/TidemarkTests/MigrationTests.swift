import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// Schema changes while replicas keep syncing: `Store.migrate`, replicas on different schemas in
/// one group, refusals that leave the store unchanged, and schema changes made behind Tidemark's back.
@Suite struct MigrationTests {
    static let v1 = "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER);"
    static let v2 = Store.Migration(
        sql: """
            ALTER TABLE items ADD COLUMN color TEXT NOT NULL DEFAULT 'none';
            ALTER TABLE items RENAME COLUMN name TO title;
            CREATE TABLE notes(id TEXT PRIMARY KEY, item TEXT, body TEXT);
            CREATE INDEX items_by_color ON items(color);
            """,
        track: ["notes"])

    static func group(_ names: [String]) throws -> ExchangeGroup {
        try ExchangeGroup(names, schema: v1, preserve: [])
    }

    @Test func replicasMigrateAtDifferentTimesAndEveryWriteOfEveryVersionSurvives() async throws {
        let group = try Self.group(["a", "b", "c"])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1), ('i2', 'two', 2)")
        for name in group.names { try group.push(name) }
        _ = try group.round()

        // a migrates and writes with the new column and table; b stays on v1 and keeps writing.
        let summary = try a.store.migrate(Self.v2)
        #expect(summary.addedColumns == ["items": ["color"]])
        #expect(summary.renamedColumns == ["items": ["name": "title"]])
        #expect(summary.trackedTables == ["notes"])
        #expect(a.store.trackedTable(named: "items")?.columns == ["id", "title", "qty", "color"])
        _ = try a.store.execute(
            sql: "UPDATE items SET color = 'red' WHERE id = 'i1'; INSERT INTO notes VALUES ('n1', 'i1', 'hello')")
        _ = try a.store.execute(sql: "INSERT INTO items(id, title, qty, color) VALUES ('i3', 'three', 3, 'blue')")
        // b, still on v1, writes the column a renamed: the write lands in the renamed column.
        _ = try b.store.execute(
            sql:
                "UPDATE items SET qty = 20, name = 'two!' WHERE id = 'i2'; INSERT INTO items(id, name, qty) VALUES ('b1', 'bee', 7)"
        )
        try group.push("a")
        try group.push("b")

        // c, still on v1, holds a's new changes back: nothing of them applied, b's applied, and it
        // says which version it waits for.
        let version = try #require(summary.version)
        let cBefore = try c.tables()
        let held = try group.pull("c", prune: false)
        #expect(held.warnings.isEmpty, "\(held.warnings)")
        #expect(held.waiting.map(\.version) == [version])
        #expect(try c.store.status().waiting.map(\.version) == [version])
        #expect(try c.tables()["items"]?.rows.count == cBefore["items"]!.rows.count + 1, "b's insert applied, a's held")
        #expect(try c.store.status().lineage.isEmpty)
        // c's own writes keep syncing meanwhile: b applies them, and so does a, on v2, where the
        // columns they do not name keep their values.
        _ = try c.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('c1', 'sea', 9)")
        try group.push("c")
        let aPull = try group.pull("a", prune: false)
        #expect(aPull.warnings.isEmpty, "\(aPull.warnings)")
        #expect(try group.pull("b", prune: false).waiting.map(\.version) == [version])
        #expect(try b.store.execute(sql: "SELECT name FROM items WHERE id = 'c1'").0[0].rows == [[.text("sea")]])

        // The folder loses a's bundles (pruned, or a copy lost): c and b hold them in their stores.
        for file in try FileManager.default.contentsOfDirectory(atPath: group.folder + "/\(a.store.replica.id)")
        where file.hasSuffix(".tmb") {
            try FileManager.default.removeItem(atPath: group.folder + "/\(a.store.replica.id)/" + file)
        }

        // c migrates, making the same version; a plain pull applies what it held.
        #expect(try c.store.migrate(Self.v2).version == version)
        let caught = try group.pull("c", prune: false)
        #expect(caught.warnings.isEmpty, "\(caught.warnings)")
        #expect(caught.waiting.isEmpty)
        #expect(try c.store.execute(sql: "SELECT color FROM items WHERE id = 'i3'").0[0].rows == [[.text("blue")]])
        #expect(try c.store.fetchHistory().contains { $0.origin == a.store.replica.id && $0.schemaVersion == version })
        // b migrates last, then everyone syncs.
        try b.store.migrate(Self.v2)
        for _ in 0..<2 { _ = try group.round(prune: false) }
        let differences = try group.tableDifferences()
        #expect(differences.isEmpty, "\(differences)")
        let items = try a.store.execute(sql: "SELECT id, title, qty, color FROM items ORDER BY id").0[0].rows
        #expect(
            items == [
                [.text("b1"), .text("bee"), .integer(7), .text("none")],
                [.text("c1"), .text("sea"), .integer(9), .text("none")],
                [.text("i1"), .text("one"), .integer(1), .text("red")],
                [.text("i2"), .text("two!"), .integer(20), .text("none")],
                [.text("i3"), .text("three"), .integer(3), .text("blue")],
            ])
        #expect(try b.store.execute(sql: "SELECT body FROM notes").0[0].rows == [[.text("hello")]])

        // A replica that joins later on v2 receives the history of both versions.
        let d = try group.add("d")
        try d.store.migrate(Self.v2)
        _ = try group.pull("d", prune: false)
        let joined = try group.tableDifferences()
        #expect(joined.isEmpty, "\(joined)")
    }

    /// Renames keep identity, dropped columns and untracked tables stop merging, and every write
    /// of every version survives in history: relayed byte for byte (its origin's signature still
    /// verifies) by replicas that migrated, and by one created from the app's newer schema.
    @Test func renamedTablesDroppedColumnsAndUntrackedTablesConvergeAcrossVersions() async throws {
        let v1 = """
            CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER);
            CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT, pinned INTEGER);
            CREATE TABLE tags(id TEXT PRIMARY KEY, label TEXT);
            """
        let v2 = Store.Migration(
            sql: "ALTER TABLE items RENAME TO things; ALTER TABLE notes DROP COLUMN body; DROP TABLE tags;",
            untrack: ["tags"])
        let group = try ExchangeGroup(["a", "b", "c"], schema: v1, preserve: [])
        let (a, b, c) = (group["a"], group["b"], group["c"])
        _ = try a.store.execute(
            sql:
                "INSERT INTO items VALUES ('i1', 'one', 1); INSERT INTO notes VALUES ('n1', 'text', 0); INSERT INTO tags VALUES ('t1', 'red')"
        )
        _ = try group.round(prune: false)

        let summary = try a.store.migrate(v2)
        #expect(summary.renamedTables == ["items": "things"])
        #expect(summary.droppedColumns == ["notes": ["body"]])
        #expect(summary.untrackedTables == ["tags"])
        #expect(a.store.trackedTables.map(\.name).sorted() == ["notes", "things"])
        _ = try a.store.execute(
            sql: "INSERT INTO things VALUES ('i2', 'two', 2); UPDATE notes SET pinned = 1 WHERE id = 'n1'")
        // b, on v1, writes the renamed table, the dropped column and the untracked table.
        _ = try b.store.execute(
            sql: """
                UPDATE items SET name = 'uno' WHERE id = 'i1'; UPDATE notes SET body = 'edited', pinned = 2 WHERE id = 'n1';
                INSERT INTO tags VALUES ('t2', 'blue')
                """)
        try group.push("a")
        try group.push("b")
        let aPull = try group.pull("a", prune: false)
        #expect(aPull.warnings.isEmpty, "\(aPull.warnings)")
        #expect(try a.store.execute(sql: "SELECT name FROM things WHERE id = 'i1'").0[0].rows == [[.text("uno")]])
        #expect(try a.store.execute(sql: "SELECT name FROM sqlite_master WHERE name = 'tags'").0[0].rows.isEmpty)
        // b's transaction keeps the dropped column and the untracked table in a's history, as written.
        let written = try #require(try a.store.fetchHistory().last { $0.origin == b.store.replica.id })
        #expect(written.changes.map(\.table).sorted() == ["items", "notes", "tags"])
        #expect(written.changes.first { $0.table == "notes" }?.values.map(\.name).sorted() == ["body", "pinned"])

        // c holds a's v2 changes until it migrates; b migrates last.
        let version = try #require(summary.version)
        #expect(try group.pull("c", prune: false).waiting.map(\.version) == [version])
        #expect(try c.store.migrate(v2).version == version)
        #expect(try group.pull("c", prune: false).waiting.isEmpty)
        try b.store.migrate(v2)
        for _ in 0..<2 { _ = try group.round(prune: false) }
        let differences = try group.tableDifferences()
        #expect(differences.isEmpty, "\(differences)")
        #expect(
            try b.store.execute(sql: "SELECT id, name, qty FROM things ORDER BY id").0[0].rows == [
                [.text("i1"), .text("uno"), .integer(1)], [.text("i2"), .text("two"), .integer(2)],
            ])
        // pinned: a's 1 and b's 2 were concurrent; the merge picked one, the same everywhere.
        #expect(try b.store.execute(sql: "SELECT count(*) FROM notes").0[0].rows == [[.integer(1)]])

        // A replica created from the new schema takes the lineage on and relays all of it.
        let d = try group.add(
            "d",
            schema:
                "CREATE TABLE things(id TEXT PRIMARY KEY, name TEXT, qty INTEGER); CREATE TABLE notes(id TEXT PRIMARY KEY, pinned INTEGER);"
        )
        let everything = group.directory.file("everything.tmb")
        _ = try a.store.exportBundle(since: .zero, to: everything, key: a.key)
        let imported = try d.store.importBundle(at: everything)
        #expect(imported.adoptedVersions == [version])
        #expect(try group.tableDifferences(["a", "d"]).isEmpty)
        let relayed = group.directory.file("relayed.tmb")
        _ = try d.store.exportBundle(since: .zero, to: relayed, key: d.key)
        let e = try group.add(
            "e",
            schema:
                "CREATE TABLE things(id TEXT PRIMARY KEY, name TEXT, qty INTEGER); CREATE TABLE notes(id TEXT PRIMARY KEY, pinned INTEGER);"
        )
        try e.trust(d)
        #expect(try e.store.importBundle(at: relayed).appliedTransactions == (try a.store.fetchHistory().count))
        #expect(try group.tableDifferences(["a", "e"]).isEmpty)
    }

    /// A row's shared clock (one write set every column) covers only the columns it had: a
    /// concurrent value for a column added later is not mistaken for older than that write.
    @Test func aSharedRowClockDoesNotCoverColumnsAddedAfterIt() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        try a.store.migrate(Self.v2)
        _ = try a.store.execute(sql: "INSERT INTO items(id, title, qty, color) VALUES ('r', 'from a', 1, 'green')")
        try await Task.sleep(nanoseconds: 20_000_000)
        _ = try b.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('r', 'from b', 2)")
        try b.store.migrate(Self.v2)
        for name in group.names { try group.push(name) }
        _ = try group.round(prune: false)
        let differences = try group.tableDifferences()
        #expect(differences.isEmpty, "\(differences)")
        #expect(
            try b.store.execute(sql: "SELECT title, color FROM items").0[0].rows == [[.text("from b"), .text("green")]])
    }

    @Test func whatTheMigrationSQLWritesIsNotHistory() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let history = try a.store.fetchHistory()
        try a.store.migrate(
            Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT; UPDATE items SET color = 'red', qty = 5"))
        // (The migration folds pending changes, which gives them their generation: compare the rest.)
        #expect(
            try a.store.fetchHistory().map(\.token) == history.map(\.token),
            "every replica runs the same migration: its writes are not replicated")
        #expect(try a.store.fetchHistory().map(\.changes.count) == history.map(\.changes.count))
        #expect(try a.store.execute(sql: "SELECT qty, color FROM items").0[0].rows == [[.integer(5), .text("red")]])
        _ = try a.store.execute(sql: "UPDATE items SET color = 'blue'")
        #expect(
            try a.store.fetchHistory().last?.changes.first?.values.map(\.name) == ["color"],
            "the new column is captured")
    }

    @Test func aMigrationThatChangesTheKeyOrThatTrackingCannotFollowIsRefusedAndChangesNothing() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let before = try a.everything()
        let refusals: [(String, String)] = [
            (
                "CREATE TABLE items2(id TEXT, name TEXT, qty INTEGER, PRIMARY KEY (id, name)); INSERT INTO items2 SELECT * FROM items; "
                    + "DROP TABLE items; ALTER TABLE items2 RENAME TO items;", "primary key changed"
            ),
            ("ALTER TABLE items RENAME COLUMN id TO ident", "its key column 'id' was renamed"),
            ("DROP TABLE items", "it was dropped; untrack a table to drop it"),
            (
                "ALTER TABLE items DROP COLUMN qty; ALTER TABLE items RENAME COLUMN name TO title",
                "a rename cannot be told from a drop and an add"
            ),
            ("ALTER TABLE items ADD COLUMN nope NOT NULL", "migration failed"),
            // A table rebuilt without its triggers is checked as a table to track is.
            (
                "CREATE TABLE items2(id TEXT PRIMARY KEY, name TEXT, qty INTEGER); INSERT INTO items2 SELECT * FROM items; "
                    + "INSERT INTO items2 VALUES (NULL, 'no key', 0); DROP TABLE items; ALTER TABLE items2 RENAME TO items;",
                "some of its rows have a NULL key"
            ),
            (
                "CREATE TABLE items2(id TEXT PRIMARY KEY COLLATE NOCASE, name TEXT, qty INTEGER); "
                    + "INSERT INTO items2 SELECT * FROM items; DROP TABLE items; ALTER TABLE items2 RENAME TO items;",
                "compares with COLLATE NOCASE"
            ),
        ]
        for (sql, expected) in refusals {
            #expect {
                try a.store.migrate(Store.Migration(sql: sql))
            } throws: { error in
                "\(error)".contains(expected)
            }
            #expect(try a.everything() == before, "store changed by refused migration: \(sql)")
        }
        #expect(throws: StoreError.self) { try a.store.migrate(Store.Migration(track: ["missing"])) }
        #expect(try a.everything() == before)
    }

    /// The values listed in the conflicts before columns were renamed read under the names the
    /// columns have after, in their order, also where two columns swapped names.
    @Test func conflictsListedBeforeARenameNameTheColumnsAsTheyAreNow() throws {
        let group = try ExchangeGroup(
            ["a", "b"], schema: "CREATE TABLE people(id TEXT PRIMARY KEY, email TEXT UNIQUE, qty INTEGER, pic BLOB);",
            preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO people VALUES ('a1', 'dup@x', 1, NULL)")
        // a's row first by its clock, which the clash rule compares (merge.md §5.1): in the same
        // millisecond the replicas' ids, made anew each run, would decide.
        Thread.sleep(forTimeInterval: 0.005)
        _ = try group["b"].store.execute(sql: "INSERT INTO people VALUES ('b1', 'dup@x', 2, X'00FF')")
        for _ in 0..<2 { try group.round(prune: false) }
        let a = group["a"]
        #expect(
            try a.store.conflicts().filter { $0.kind == "unique" }.map(\.row) == [
                #"{"email":"dup@x","qty":2,"pic":{"base64":"AP8="}}"#
            ])
        try a.store.migrate(
            Store.Migration(
                sql: """
                    ALTER TABLE people RENAME COLUMN email TO tmp; ALTER TABLE people RENAME COLUMN qty TO email;
                    ALTER TABLE people RENAME COLUMN tmp TO qty; ALTER TABLE people RENAME TO persons;
                    """))
        let listed = try a.store.conflicts().filter { $0.kind == "unique" }
        #expect(listed.map(\.table) == ["persons"])
        #expect(listed.map(\.row) == [#"{"qty":"dup@x","email":2,"pic":{"base64":"AP8="}}"#])
        // A column dropped, and its name given to another: no name is listed twice.
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE persons DROP COLUMN email"))
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE persons RENAME COLUMN qty TO email"))
        #expect(
            try a.store.conflicts().filter { $0.kind == "unique" }.map(\.row) == [
                #"{"email":"dup@x","email (dropped)":2,"pic":{"base64":"AP8="}}"#
            ])
    }

    /// A swaps two columns' names through a temporary one. B, which made no migration, has the
    /// same names, each on the other's values: it must not take that version on (its rows would
    /// pass for each other's), and waits until it makes the migration; then the two agree.
    @Test func aSwapOfColumnNamesIsAMigrationToMakeNotToTakeOn() throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        try group.round(prune: false)
        let swap = Store.Migration(
            sql: """
                ALTER TABLE items RENAME COLUMN name TO tmp; ALTER TABLE items RENAME COLUMN qty TO name;
                ALTER TABLE items RENAME COLUMN tmp TO qty;
                """)
        let version = try #require(try a.store.migrate(swap).version)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i2', 2, 'two')")
        try group.push("a")
        _ = try b.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i3', 'three', 3)")
        try group.push("b")
        #expect(try b.store.status().lineage.isEmpty, "a push takes nothing on")
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.waiting.map(\.version) == [version], "\(pulled)")
        #expect(try b.store.status().lineage.isEmpty)
        #expect(try b.store.migrate(swap).version == version)
        for _ in 0..<2 { try group.round(prune: false) }
        #expect(try group.tableDifferences() == [])
        #expect(
            try a.store.execute(sql: "SELECT id, name, qty FROM items ORDER BY id").0[0].rows == [
                [.text("i1"), .integer(1), .text("one")], [.text("i2"), .integer(2), .text("two")],
                [.text("i3"), .integer(3), .text("three")],
            ])
    }

    /// A tracks a table again after untracking it (and writing to it meanwhile). B, which tracks
    /// the table all along, does not take those versions on as if its tables had them already: its
    /// rows would keep the old table's clocks and the replicas would stay apart. It waits for them,
    /// makes the same migrations, and the two converge.
    @Test func aTableTrackedAgainIsAMigrationToMakeNotToTakeOn() throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'orig', 1)")
        try group.round(prune: false)
        let untrack = try #require(try a.store.migrate(Store.Migration(untrack: ["items"])).version)
        _ = try a.store.execute(sql: "UPDATE items SET name = 'while untracked' WHERE id = 'i1'")
        let track = try #require(try a.store.migrate(Store.Migration(track: ["items"])).version)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i2', 'tracked again', 2)")
        try group.push("a")
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.waiting.map(\.version) == [track], "\(pulled)")
        #expect(try b.store.status().lineage.isEmpty)
        try b.store.migrate(Store.Migration(untrack: ["items"]))
        try b.store.migrate(Store.Migration(track: ["items"]))
        #expect(try b.store.status().lineage == [untrack, track])
        for _ in 0..<2 { try group.round(prune: false) }
        #expect(try group.tableDifferences() == [])
        #expect(try b.tables()["items"]?.rows.contains { $0[0] == .text("i2") } == true)
    }

    /// A table untracked and then tracked again under another key is refused, the store
    /// unchanged: a bundle spanning both would name the table with two keys, and every peer would
    /// refuse it. Tracked again with its key, it is tracked.
    @Test func aTableTrackedAgainUnderAnotherKeyIsRefusedAndChangesNothing() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        try a.store.migrate(Store.Migration(untrack: ["items"]))
        let before = try a.everything()
        let rekeyed = """
            CREATE TABLE items2(id TEXT, name TEXT, qty INTEGER, PRIMARY KEY (name)); INSERT INTO items2 SELECT * FROM items;
            DROP TABLE items; ALTER TABLE items2 RENAME TO items;
            """
        #expect {
            try a.store.migrate(Store.Migration(sql: rekeyed, track: ["items"]))
        } throws: { error in
            "\(error)".contains("tracked before with the key (id), and is now keyed by (name)")
        }
        #expect(try a.everything() == before)
        try a.store.migrate(Store.Migration(track: ["items"]))
        #expect(try a.store.status().tables.map(\.name).contains("items"))
    }

    /// A store whose registrations predate column slots (no `layout`, `retired` or `untracked`, a
    /// unique name) is upgraded when opened, then renames, drops and untracks like any other.
    @Test func aStoreFromBeforeColumnSlotsIsUpgradedOnOpenAndMigrates() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        _ = try group.round(prune: false)
        let old = try DatabaseQueue(path: a.path)
        try await old.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE old_tables(
                        id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, columns TEXT NOT NULL,
                        key_columns TEXT NOT NULL, preserved TEXT NOT NULL, shared_width INTEGER);
                    INSERT INTO old_tables SELECT id, name, columns, key_columns, preserved, shared_width FROM tidemark_tables;
                    DROP TABLE tidemark_tables;
                    ALTER TABLE old_tables RENAME TO tidemark_tables;
                    """)
        }
        try old.close()
        let reopened = try Store.open(a.path)
        let columns = try await DatabaseQueue(path: a.path).read { db in
            try db.columns(in: "tidemark_tables").map(\.name)
        }
        #expect(
            columns.contains("layout") && columns.contains("retired") && columns.contains("untracked"), "\(columns)")
        let summary = try reopened.migrate(
            Store.Migration(
                sql: "ALTER TABLE items RENAME COLUMN name TO title; ALTER TABLE items ADD COLUMN note TEXT"))
        #expect(summary.renamedColumns == ["items": ["name": "title"]])
        _ = try reopened.execute(sql: "UPDATE items SET title = 'uno', note = 'n' WHERE id = 'i1'")
        _ = try b.store.execute(sql: "UPDATE items SET qty = 2 WHERE id = 'i1'")
        try b.store.migrate(
            Store.Migration(
                sql: "ALTER TABLE items RENAME COLUMN name TO title; ALTER TABLE items ADD COLUMN note TEXT"))
        _ = try reopened.push(to: group.folder, key: a.key)
        for _ in 0..<2 { _ = try group.round(prune: false) }
        #expect(try group.tableDifferences().isEmpty)
        #expect(
            try b.store.execute(sql: "SELECT title, qty, note FROM items").0[0].rows == [
                [.text("uno"), .integer(2), .text("n")]
            ])
    }

    /// A store whose row metadata kept a pair of clock columns per slot (`t<slot>`, `o<slot>`) is
    /// rewritten when opened with those clocks in one BLOB: every row's metadata reads the same,
    /// and the store keeps merging column by column.
    @Test func rowMetadataWithAPairOfClockColumnsPerSlotIsPackedOnOpen() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(
            sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1), ('i2', 'two', 2), ('i3', 'three', 3)")
        _ = try group.round(prune: false)
        // i1: name set by a, qty by b. i2: a column added later, set alone. i3: a tombstone.
        _ = try a.store.execute(sql: "UPDATE items SET name = 'uno' WHERE id = 'i1'")
        _ = try b.store.execute(sql: "UPDATE items SET qty = 10 WHERE id = 'i1'")
        for _ in 0..<2 { _ = try group.round(prune: false) }
        for replica in [a, b] {
            try replica.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN note TEXT"))
        }
        _ = try a.store.execute(sql: "UPDATE items SET note = 'n' WHERE id = 'i2'")
        _ = try b.store.execute(sql: "DELETE FROM items WHERE id = 'i3'")
        for _ in 0..<2 { _ = try group.round(prune: false) }

        // Rewrites a's row metadata as an earlier build kept it: slots 1–3 are name, qty and note.
        let old = try DatabaseQueue(path: a.path)
        let (name, before, packedRows) = try old.write { db in
            let id = try #require(try Int64.fetchOne(db, sql: "SELECT id FROM tidemark_tables WHERE name = 'items'"))
            let name = "tidemark_rows_\(id)"
            let before = try Row.fetchAll(db, sql: "SELECT * FROM \(name) ORDER BY k0")
            try db.execute(
                sql: """
                    CREATE TABLE legacy(k0, gen INTEGER NOT NULL, t INTEGER, o INTEGER, t1 INTEGER, o1 INTEGER,
                        t2 INTEGER, o2 INTEGER, h INTEGER, w INTEGER, t3 INTEGER, o3 INTEGER, PRIMARY KEY(k0)) WITHOUT ROWID
                    """)
            var packedRows = 0
            for row in before {
                var clocks: [String: Int64] = [:]
                if let blob = row["c"] as Data? {
                    packedRows += 1
                    for (slot, timestamp, origin) in ColumnClocksReference.entries([UInt8](blob)) {
                        clocks["t\(slot)"] = timestamp
                        clocks["o\(slot)"] = origin
                    }
                }
                let names = ["t1", "o1", "t2", "o2", "t3", "o3"]
                try db.execute(
                    sql:
                        "INSERT INTO legacy(k0, gen, t, o, h, w, \(names.joined(separator: ", "))) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    arguments: StatementArguments(
                        [row["k0"], row["gen"], row["t"], row["o"], row["h"], row["w"]] as [DatabaseValue]
                            + names.map { clocks[$0].databaseValue }))
            }
            try db.execute(sql: "DROP TABLE \(name); ALTER TABLE legacy RENAME TO \(name)")
            try db.execute(sql: "UPDATE tidemark_meta SET value = 1 WHERE key = 'format'")
            // A view of the app's that names a table since dropped: SQLite's checks of a rename
            // would fail on it.
            try db.execute(sql: "CREATE TABLE gone(x); CREATE VIEW broken AS SELECT x FROM gone; DROP TABLE gone")
            return (name, before, packedRows)
        }
        try old.close()
        #expect(packedRows == 2, "i1 and i2 have clocks per column: \(before)")

        let reopened = try Store.open(a.path)
        let (sql, after) = try DatabaseQueue(path: a.path).read { db in
            (
                try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = ?", arguments: [name]),
                try Row.fetchAll(db, sql: "SELECT * FROM \(name) ORDER BY k0")
            )
        }
        #expect(sql?.contains(", c BLOB,") == true && sql?.contains("t1") == false, "\(sql ?? "")")
        #expect(after == before)
        let format = try await DatabaseQueue(path: a.path).read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM tidemark_meta WHERE key = 'format'")
        }
        // Upgraded to this build's format: a build that reads format 1 or 2 refuses the store.
        #expect(format == 3)

        // Concurrent edits of different columns still both survive, and i3 stays deleted.
        _ = try reopened.execute(sql: "UPDATE items SET name = 'eins' WHERE id = 'i1'")
        _ = try b.store.execute(sql: "UPDATE items SET note = 'm' WHERE id = 'i1'")
        _ = try reopened.push(to: group.folder, key: a.key)
        _ = try reopened.pull(from: group.folder, key: a.key)
        for _ in 0..<2 { _ = try group.round(prune: false) }
        #expect(try group.tableDifferences().isEmpty)
        #expect(
            try b.store.execute(sql: "SELECT id, name, qty, note FROM items ORDER BY id").0[0].rows == [
                [.text("i1"), .text("eins"), .integer(10), .text("m")],
                [.text("i2"), .text("two"), .integer(2), .text("n")],
            ])
    }

    /// A store whose row metadata kept the generation in a column named `cl` is upgraded when
    /// opened, and merges against the generations it kept: a row deleted there stays deleted.
    @Test func rowMetadataFromBeforeTheGenerationColumnWasNamedGenIsUpgradedOnOpen() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1), ('i2', 'two', 2)")
        _ = try group.round(prune: false)
        // Concurrently, a deletes a row and b updates it: a's kept generation must outrank b's write.
        _ = try a.store.execute(sql: "DELETE FROM items WHERE id = 'i2'")
        _ = try b.store.execute(sql: "UPDATE items SET qty = 20 WHERE id = 'i2'")
        let old = try DatabaseQueue(path: a.path)
        let metadataTables = try await old.write { db in
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'tidemark_rows_%'")
            for table in tables { try db.execute(sql: "ALTER TABLE \(table) RENAME COLUMN gen TO cl") }
            // A view of the app's that names a table since dropped: SQLite would refuse to rename
            // a column back while it is there.
            try db.execute(sql: "CREATE TABLE gone(x); CREATE VIEW broken AS SELECT x FROM gone; DROP TABLE gone")
            return tables
        }
        try old.close()
        #expect(!metadataTables.isEmpty)
        let reopened = try Store.open(a.path)
        let columns = try await DatabaseQueue(path: a.path).read { db in
            try metadataTables.map { try db.columns(in: $0).map(\.name) }
        }
        #expect(columns.allSatisfy { $0.contains("gen") && !$0.contains("cl") }, "\(columns)")
        _ = try reopened.execute(sql: "UPDATE items SET qty = 10 WHERE id = 'i1'")
        _ = try reopened.push(to: group.folder, key: a.key)
        for _ in 0..<2 { _ = try group.round(prune: false) }
        #expect(try group.tableDifferences().isEmpty)
        #expect(
            try b.store.execute(sql: "SELECT id, qty FROM items ORDER BY id").0[0].rows == [
                [.text("i1"), .integer(10)]
            ])
    }

    /// Tidemark's own tables and triggers cannot be changed through `execute`, not even for the
    /// span of one statement: a capture trigger dropped and made again around a write would leave
    /// that write unrecorded. Other schema changes that leave tracked tables as they are run.
    @Test func bookkeepingChangedThroughExecIsRefusedAndOtherSchemaChangesRun() async throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        let id = try #require(a.store.trackedTable(named: "items")?.id)
        let insertTrigger = "tidemark_\(id)_insert"
        let triggerSQL = try await DatabaseQueue(path: a.path).read { db in
            try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = ?", arguments: [insertTrigger])
        }
        let before = try a.everything()
        let triggerText = try #require(triggerSQL)
        /// Each way to record a write behind capture, and the object it touches.
        let refusals = [
            ("DROP TRIGGER \(insertTrigger)", insertTrigger),
            ("DROP TRIGGER \(insertTrigger); INSERT INTO items(id) VALUES ('x'); \(triggerText)", insertTrigger),
            ("/* note */ DROP TRIGGER \(insertTrigger); INSERT INTO items(id) VALUES ('x')", insertTrigger),
            ("DROP TABLE tidemark_conflicts", "tidemark_conflicts"),
            (
                "CREATE TRIGGER audit BEFORE INSERT ON tidemark_changes BEGIN SELECT RAISE(IGNORE); END",
                "tidemark_changes"
            ),
            (
                "CREATE TEMP TRIGGER audit BEFORE INSERT ON main.tidemark_changes BEGIN SELECT RAISE(IGNORE); END",
                "tidemark_changes"
            ),
            (
                "CREATE TRIGGER wipe AFTER INSERT ON items BEGIN DELETE FROM \"TIDEMARK_CHANGES\"; END",
                "TIDEMARK_CHANGES"
            ),
            ("DELETE FROM tidemark_changes", "tidemark_changes"),
            ("DELETE FROM 'tidemark_changes'", "tidemark_changes"),
            ("WITH \"--\" AS (SELECT 1) DELETE FROM tidemark_changes", "tidemark_changes"),
            ("WITH [/*] AS (SELECT 1) DELETE FROM tidemark_changes", "tidemark_changes"),
            ("WITH \"q'\" AS (SELECT 1) DELETE FROM tidemark_changes /*'*/", "tidemark_changes"),
            ("UPDATE items SET name = 'x'; /* history */ DELETE FROM tidemark_transactions", "tidemark_transactions"),
        ]
        for (sql, object) in refusals {
            #expect {
                try a.store.execute(sql: sql)
            } throws: { error in
                guard case StoreError.bookkeepingChanged(_, let touched) = error else { return false }
                return touched == object
            }
        }
        // SQLite's defensive flag refuses editing the schema's text, and a COMMIT behind a comment
        // is transaction control all the same.
        #expect(throws: StoreError.self) {
            try a.store.execute(
                sql: "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'x' WHERE name = '\(insertTrigger)'")
        }
        #expect {
            try a.store.execute(sql: "INSERT INTO items(id) VALUES ('x'); /* done */ COMMIT")
        } throws: { error in
            guard case StoreError.transactionControlNotAllowed = error else { return false }
            return true
        }
        #expect(try a.everything() == before)

        _ = try a.store.execute(
            sql: """
                CREATE TABLE scratch(x); INSERT INTO scratch VALUES ('not tidemark_changes');
                SELECT count(*) FROM tidemark_changes; CREATE INDEX items_by_name ON items(name);
                INSERT INTO items(id, name) VALUES ('i1', 'one'); ALTER TABLE scratch ADD COLUMN y
                """)
        #expect(try a.store.fetchHistory().last?.changes.map(\.key) == [[.init("id", .text("i1"))]])
    }

    /// A migration's code is kept off Tidemark's objects as its SQL is: a write to a bookkeeping
    /// table that capture does not make, or a bookkeeping object dropped, changed or added, is
    /// refused with the object named, and the store is left as it was. Code that writes tracked
    /// rows, and renames a tracked column (which rewrites its capture triggers), still runs.
    @Test func aMigrationsCodeThatTouchesBookkeepingIsRefusedAndChangesNothing() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let id = try #require(a.store.trackedTable(named: "items")?.id)
        let before = try a.everything()
        let refusals = [
            ("DELETE FROM tidemark_changes", "tidemark_changes"),
            (
                "INSERT INTO items(id) VALUES ('x'); UPDATE tidemark_transactions SET author = 'x'",
                "tidemark_transactions"
            ),
            ("INSERT INTO tidemark_conflicts DEFAULT VALUES", "tidemark_conflicts"),
            ("DELETE FROM tidemark_rows_\(id)", "tidemark_rows_\(id)"),
            ("DROP TABLE tidemark_conflicts", "tidemark_conflicts"),
            ("CREATE INDEX by_op ON tidemark_changes(op)", "by_op"),
            ("CREATE TRIGGER wipe AFTER INSERT ON items BEGIN DELETE FROM tidemark_changes; END", "wipe"),
        ]
        for (sql, object) in refusals {
            #expect {
                try a.store.migrate(Store.Migration { db in try db.execute(sql: sql) })
            } throws: { error in
                guard case StoreError.bookkeepingChanged(_, let touched) = error else { return false }
                return touched == object
            }
            #expect(try a.everything() == before, "\(sql)")
        }
        let summary = try a.store.migrate(
            Store.Migration { db in
                try db.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i2', 'two', 2)")
                try db.execute(sql: "ALTER TABLE items RENAME COLUMN name TO title")
            })
        #expect(summary.renamedColumns == ["items": ["name": "title"]])
        _ = try a.store.execute(sql: "UPDATE items SET title = 'uno' WHERE id = 'i1'")
        #expect(try a.store.fetchHistory().last?.changes.first?.key == [.init("id", .text("i1"))])
    }

    /// A table another client rebuilt with other columns lost its capture triggers too: the next
    /// open adopts the change as a migration and makes them anew, and says the table's writes
    /// meanwhile went unrecorded, as for a table rebuilt with the same columns.
    @Test func captureTriggersLostWithARebuildThatDroppedAColumnAreReported() async throws {
        let group = try Self.group(["a", "b"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE items_new(id TEXT PRIMARY KEY, name TEXT);
                    INSERT INTO items_new SELECT id, name FROM items; DROP TABLE items;
                    ALTER TABLE items_new RENAME TO items;
                    UPDATE items SET name = 'uno' WHERE id = 'i1';
                    """)
        }
        let reopened = try Store.open(a.path)
        #expect(reopened.adoptedSchemaChange?.droppedColumns == ["items": ["qty"]])
        #expect(reopened.restoredCaptureTriggers == ["items"])
        #expect(try Store.open(a.path).restoredCaptureTriggers.isEmpty, "reported once")
        // A column added by `ALTER TABLE` keeps the triggers: nothing went unrecorded.
        try await other.write { db in try db.execute(sql: "ALTER TABLE items ADD COLUMN color TEXT") }
        let again = try Store.open(a.path)
        #expect(again.adoptedSchemaChange != nil)
        #expect(again.restoredCaptureTriggers.isEmpty)
    }

    /// A column dropped and given back in one migration (added again, or another renamed onto
    /// its name) ends with the same names, but lost its values here and keeps them everywhere
    /// else: refused, the store unchanged. So is SQL that names a table that does not exist, as
    /// a failed migration naming the statement.
    @Test(arguments: [
        "ALTER TABLE items DROP COLUMN qty; ALTER TABLE items ADD COLUMN qty INTEGER;",
        "ALTER TABLE items DROP COLUMN name; ALTER TABLE items RENAME COLUMN qty TO name;",
        "ALTER TABLE items DROP COLUMN QTY; ALTER TABLE items ADD COLUMN Qty INTEGER;",
        "-- reset qty\nALTER TABLE items DROP COLUMN qty; /* again */ ALTER TABLE items ADD COLUMN qty INTEGER;",
        """
        ALTER TABLE items RENAME TO items_old; CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT);
        INSERT INTO items SELECT id, name FROM items_old; DROP TABLE items_old; ALTER TABLE items ADD COLUMN qty INTEGER;
        """,
        "-- a comment\nALTER TABLE nosuch ADD COLUMN x; CREATE INDEX by_name ON items(name);",
    ])
    func aColumnDroppedAndGivenBackInOneMigrationIsRefused(_ sql: String) throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let before = try StoreSnapshot.everything(of: a.path)
        #expect {
            try a.store.migrate(Store.Migration(sql: sql))
        } throws: { error in
            switch error {
            case StoreError.unsupportedMigration(_, let change): return change.contains("dropped and given back")
            case StoreError.migrationFailed(let statement, let message):
                return statement == "ALTER TABLE nosuch ADD COLUMN x" && message.contains("no such table")
            default: return false
            }
        }
        #expect(try StoreSnapshot.everything(of: a.path) == before)
    }

    /// What the check for a column given back lets through: a generated column dropped and added
    /// again (how SQLite changes its expression: it holds no value), and a table the same
    /// migration untracks.
    @Test func aGeneratedColumnMadeAgainAndAnUntrackedTableAreNoColumnGivenBack() throws {
        let group = try ExchangeGroup(
            ["a"],
            schema: """
                CREATE TABLE g(id TEXT PRIMARY KEY, a INTEGER, d INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL);
                CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER);
                """, preserve: [])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO g(id, a) VALUES ('g1', 2)")
        _ = try a.store.migrate(
            Store.Migration(
                sql:
                    "ALTER TABLE g DROP COLUMN d; ALTER TABLE g ADD COLUMN d INTEGER GENERATED ALWAYS AS (a * 3) VIRTUAL"
            ))
        #expect(try a.store.execute(sql: "SELECT d FROM g").0[0].rows == [[.integer(6)]])
        _ = try a.store.migrate(
            Store.Migration(
                sql: "ALTER TABLE items DROP COLUMN qty; ALTER TABLE items ADD COLUMN qty INTEGER", untrack: ["items"]))
        #expect(a.store.trackedTables.map(\.name) == ["g"])
    }

    /// A store holding a peer's bundle written under a version it has not made refuses to make
    /// another version at that position, which would fork it from that peer for good, and changes
    /// nothing; the peer's migration is made, and the bundle applies.
    @Test func aMigrationThatWouldForkFromAHeldBundleIsRefused() throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        let addColor = Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT")
        let made = try #require(try a.store.migrate(addColor).version)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, color) VALUES ('i1', 'one', 'red')")
        try group.push("a")
        #expect(try group.pull("b", prune: false).waiting.map(\.version) == [made])
        let before = try StoreSnapshot.everything(of: b.path)
        #expect {
            try b.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN size TEXT"))
        } throws: { error in
            guard case StoreError.migrationForks(_, let held) = error else { return false }
            return held == made
        }
        #expect(try StoreSnapshot.everything(of: b.path) == before)
        // A migration that makes no version (an index) is no fork.
        _ = try b.store.migrate(Store.Migration(sql: "CREATE INDEX items_by_name ON items(name)"))
        #expect(try b.store.migrate(addColor).version == made)
        _ = try group.pull("b", prune: false)
        #expect(
            try b.store.execute(sql: "SELECT id, name, color FROM items").0[0].rows == [
                [.text("i1"), .text("one"), .text("red")]
            ])
    }

    /// A row another client inserted into a table it rebuilt with a column more, before the capture
    /// triggers were back, went unrecorded: the adoption records the new column's values of the
    /// rows history holds, and none for that row, which would reach peers as a row of that one
    /// column (a NOT NULL column empty there, settled by deleting the row, and the delete then
    /// taking the writer's row too).
    @Test func aRowWrittenWhileTheTriggersWereMissingGetsNoAdoptedValue() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        _ = try group.round(prune: false)
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE items_new(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, color TEXT);
                    INSERT INTO items_new SELECT id, name, qty, 'c-' || id FROM items; DROP TABLE items;
                    ALTER TABLE items_new RENAME TO items;
                    INSERT INTO items VALUES ('i2', 'two', 2, 'red');
                    """)
        }
        let reopened = try Store.open(a.path)
        #expect(reopened.adoptedSchemaChange?.addedColumns == ["items": ["color"]])
        _ = try b.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT"))
        _ = try reopened.push(to: group.folder, key: a.key)
        _ = try group.round(["b"], prune: false)
        _ = try reopened.pull(from: group.folder, key: a.key, prune: false)
        let rows = "SELECT id, name, qty, color FROM items ORDER BY id"
        #expect(
            try b.store.execute(sql: rows).0[0].rows == [[.text("i1"), .text("one"), .integer(1), .text("c-i1")]])
        #expect(
            try reopened.execute(sql: rows).0[0].rows == [
                [.text("i1"), .text("one"), .integer(1), .text("c-i1")],
                [.text("i2"), .text("two"), .integer(2), .text("red")],
            ])
        #expect(try b.store.conflicts().isEmpty)
        #expect(try reopened.conflicts().isEmpty)
    }

    /// A row another client deleted while the capture triggers were missing (a rebuild) is gone
    /// though its history holds it alive: when a peer's update of it arrives it cannot be merged
    /// into, and is deleted everywhere (merge.md §4.4). The peer lists the row as it held it, not
    /// as the replica that settled it knew it (the update alone).
    @Test func aRowDeletedWhileTheTriggersWereMissingIsListedWithThePeersValues() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        /// Another client rebuilds `items` on a (its capture triggers go with it) and deletes row `id`.
        func rebuildDeleting(_ id: String) async throws {
            try await DatabaseQueue(path: a.path).write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE items_new(id TEXT PRIMARY KEY, name TEXT, qty INTEGER);
                        INSERT INTO items_new SELECT * FROM items; DROP TABLE items;
                        ALTER TABLE items_new RENAME TO items; DELETE FROM items WHERE id = ?;
                        """, arguments: [id])
            }
        }
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1), ('i2', 'two', 2)")
        _ = try group.round(prune: false)
        try await rebuildDeleting("i2")
        let reopened = try Store.open(a.path)
        _ = try b.store.execute(sql: "UPDATE items SET qty = 22 WHERE id = 'i2'")
        try group.push("b")
        _ = try reopened.pull(from: group.folder, key: a.key, prune: false)
        _ = try reopened.push(to: group.folder, key: a.key)
        _ = try group.pull("b", prune: false)
        let listed = try #require(try b.store.conflicts().first { $0.kind == "remote" })
        #expect(listed.row == #"{"name":"two","qty":22}"#, "\(listed)")
        // A later life held here is not the one the resolution ended: the resolver's row is listed.
        _ = try b.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i3', 'three', 3)")
        _ = try group.round(["b"], prune: false)
        _ = try reopened.pull(from: group.folder, key: a.key, prune: false)
        try await rebuildDeleting("i3")
        let again = try Store.open(a.path)
        _ = try b.store.execute(sql: "UPDATE items SET qty = 33 WHERE id = 'i3'")
        try group.push("b")
        _ = try again.pull(from: group.folder, key: a.key, prune: false)
        _ = try again.push(to: group.folder, key: a.key)
        _ = try b.store.execute(
            sql: "DELETE FROM items WHERE id = 'i3'; INSERT INTO items(id, name, qty) VALUES ('i3', 'fresh', 99)")
        _ = try group.pull("b", prune: false)
        let later = try #require(try b.store.conflicts().first { $0.kind == "remote" && $0.key.contains("i3") })
        #expect(!later.row.contains("fresh"), "\(later)")
        #expect(try b.store.execute(sql: "SELECT name FROM items WHERE id = 'i3'").0[0].rows == [[.text("fresh")]])
        let removed = try #require(try reopened.conflicts().first { $0.kind == "removed" })
        #expect(removed.detail.contains("while the capture triggers were missing"), "\(removed.detail)")
    }

    /// A table another client rebuilt with the same columns (made anew, filled, renamed into place)
    /// lost its capture triggers with the table it replaced: the next open puts them back, once,
    /// and that client's later writes are recorded again.
    @Test func captureTriggersAnotherClientLostAreBackAfterTheNextOpen() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE items_new(id TEXT PRIMARY KEY, name TEXT, qty INTEGER);
                    INSERT INTO items_new SELECT * FROM items; DROP TABLE items; ALTER TABLE items_new RENAME TO items;
                    """)
        }
        let reopened = try Store.open(a.path)
        #expect(reopened.restoredCaptureTriggers == ["items"])
        #expect(try Store.open(a.path).restoredCaptureTriggers.isEmpty, "put back once")
        try await other.write { db in try db.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i2', 'two', 2)") }
        // A trigger replaced by one of the same name that records nothing is made again too (it
        // reads otherwise than this build makes it), without a report: it is not missing.
        let id = try #require(reopened.trackedTable(named: "items")?.id)
        try await other.write { db in
            try db.execute(
                sql: """
                    DROP TRIGGER tidemark_\(id)_insert;
                    CREATE TRIGGER tidemark_\(id)_insert AFTER INSERT ON items BEGIN SELECT 1; END
                    """)
        }
        #expect(try Store.open(a.path).restoredCaptureTriggers.isEmpty)
        try await other.write { db in try db.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i3', 'three', 3)")
        }
        _ = try reopened.push(to: group.folder, key: a.key)
        _ = try group.round(prune: false)
        #expect(
            try b.store.execute(sql: "SELECT id, name, qty FROM items ORDER BY id").0[0].rows == [
                [.text("i1"), .text("one"), .integer(1)], [.text("i2"), .text("two"), .integer(2)],
                [.text("i3"), .text("three"), .integer(3)],
            ])
    }

    /// A store kept open while another client drops a capture trigger repairs it before its next
    /// write, which is recorded, and says so; a write that is refused rolls the repair back with it.
    @Test func aStoreKeptOpenRepairsCaptureTriggersBeforeItsNextWrite() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        let id = try #require(a.store.trackedTable(named: "items")?.id)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i0', 'zero')")
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in try db.execute(sql: "DROP TRIGGER tidemark_\(id)_insert") }
        #expect(throws: StoreError.self) {
            try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i0', 'dup')")
        }
        #expect(a.store.restoredCaptureTriggers.isEmpty, "rolled back with the refused write")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i1', 'one')")
        #expect(a.store.restoredCaptureTriggers == ["items"])
        #expect(try a.store.fetchHistory().last?.changes.map(\.key) == [[.init("id", .text("i1"))]])
        try other.write { db in try db.execute(sql: "INSERT INTO items(id, name) VALUES ('i2', 'two')") }
        try other.close()
        #expect(try a.store.fetchHistory().last?.changes.map(\.key) == [[.init("id", .text("i2"))]])
    }

    /// A trigger another client drops after an import is put back before the store's next write,
    /// which is recorded: the import leaves the triggers checked at the schema as it was.
    @Test func aStoreThatImportedRepairsCaptureTriggersDroppedAfterTheImport() throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        let id = try #require(a.store.trackedTable(named: "items")?.id)
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b1', 'from b')")
        _ = try b.store.push(to: group.folder, key: b.key)
        #expect(try a.store.pull(from: group.folder, key: a.key).changedTables == ["items"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'after the import')")
        #expect(a.store.restoredCaptureTriggers.isEmpty)
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in try db.execute(sql: "DROP TRIGGER tidemark_\(id)_insert") }
        try other.close()
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a2', 'after the drop')")
        #expect(a.store.restoredCaptureTriggers == ["items"])
        #expect(try a.store.fetchHistory().last?.changes.map(\.key) == [[.init("id", .text("a2"))]])
    }

    /// A trigger another client drops while a store is open, when the store's next operation is an
    /// import: the import puts the trigger back before it merges, and the store says so, since the
    /// other client's writes meanwhile were not recorded.
    @Test func anImportAfterATriggerWasDroppedReportsTheRestoration() throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        let id = try #require(a.store.trackedTable(named: "items")?.id)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a0', 'before')")
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b1', 'from b')")
        _ = try b.store.push(to: group.folder, key: b.key)
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in
            try db.execute(sql: "DROP TRIGGER tidemark_\(id)_insert")
            try db.execute(sql: "INSERT INTO items(id, name) VALUES ('x1', 'unrecorded')")
        }
        try other.close()
        #expect(try a.store.pull(from: group.folder, key: a.key).changedTables == ["items"])
        #expect(a.store.restoredCaptureTriggers == ["items"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a2', 'after the import')")
        #expect(try a.store.fetchHistory().last?.changes.map(\.key) == [[.init("id", .text("a2"))]])
    }

    /// A column another client renames while a store is open is carried into the capture triggers
    /// by SQLite: the store's next write leaves them so (its registration still names the old
    /// column), the table stays writable by every client, and the next open adopts the rename.
    @Test func aStoreKeptOpenLeavesTheTriggersOfATableAnotherClientChanged() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in try db.execute(sql: "ALTER TABLE items RENAME COLUMN name TO title") }
        _ = try a.store.execute(sql: "INSERT INTO items(id, title) VALUES ('i0', 'zero')")
        try other.write { db in try db.execute(sql: "INSERT INTO items(id, title) VALUES ('i1', 'one')") }
        try other.close()
        #expect(try Store.open(a.path).adoptedSchemaChange?.renamedColumns == ["items": ["name": "title"]])
    }

    /// Stores opened at once after another client dropped a capture trigger: one puts it back,
    /// the others find it there, and none fails.
    @Test func storesOpenedAtOnceRepairCaptureTriggersOnce() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        let id = try #require(a.store.trackedTable(named: "items")?.id)
        for round in 0..<10 {
            let other = try DatabaseQueue(path: a.path)
            try other.write { db in try db.execute(sql: "DROP TRIGGER tidemark_\(id)_insert") }
            try other.close()
            let outcomes = Outcomes()
            DispatchQueue.concurrentPerform(iterations: 3) { _ in
                do { outcomes.append(try Store.open(a.path).restoredCaptureTriggers.joined()) } catch {
                    outcomes.append("\(error)")
                }
            }
            #expect(outcomes.sorted == ["", "", "items"], "round \(round)")
        }
    }

    /// What concurrent opens reported.
    final class Outcomes: @unchecked Sendable {  // @unchecked: `values` is guarded by `lock`.
        private let lock = NSLock()
        private var values: [String] = []
        func append(_ value: String) { lock.withLock { values.append(value) } }
        var sorted: [String] { lock.withLock { values.sorted() } }
    }

    @Test func schemaChangesThroughExecAreRefusedAndThoseOfOtherClientsAdopted() async throws {
        let group = try Self.group(["a", "b"])
        let a = group["a"]
        let before = try a.everything()
        #expect(throws: StoreError.schemaChangeNeedsMigration(statement: "ALTER TABLE items ADD COLUMN c")) {
            try a.store.execute(sql: "INSERT INTO items(id) VALUES ('x'); ALTER TABLE items ADD COLUMN c")
        }
        #expect(try a.everything() == before)

        // Another client adds a column: the next open adopts it as a migration.
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in try db.execute(sql: "ALTER TABLE items ADD COLUMN color TEXT DEFAULT 'none'") }
        let reopened = try Store.open(a.path)
        #expect(reopened.adoptedSchemaChange?.addedColumns == ["items": ["color"]])
        #expect(try Store.open(a.path).adoptedSchemaChange == nil, "adopted once")
        _ = try reopened.execute(sql: "INSERT INTO items(id, name, color) VALUES ('i1', 'one', 'red')")
        #expect(
            try reopened.fetchHistory().last?.changes.first?.values.contains {
                $0.name == "color" && $0.value == .text("red")
            } == true)

        // A rename made behind Tidemark's back is adopted too: SQLite renamed the column in the
        // capture triggers, which is how it is told from a drop and an add.
        try await other.write { db in try db.execute(sql: "ALTER TABLE items RENAME COLUMN qty TO quantity") }
        #expect(try Store.open(a.path).adoptedSchemaChange?.renamedColumns == ["items": ["qty": "quantity"]])
        // A key change is reported, naming what it found.
        try await other.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE items2(id TEXT, name TEXT, quantity INTEGER, color TEXT, PRIMARY KEY (id, name));
                    DROP TABLE items; ALTER TABLE items2 RENAME TO items;
                    """)
        }
        #expect { try Store.open(a.path) } throws: { error in "\(error)".contains("primary key changed") }
    }

    /// Another client adds a column and writes to it before any Tidemark command adopts the
    /// change (a backfill, a row inserted with it): adoption records those values, all but the
    /// default the column's addition gives every replica, so that a peer that makes the same
    /// change ends with the same rows.
    @Test func valuesWrittenToAColumnAnotherClientAddedReachPeersOnceAdopted() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i1', 'one'), ('i2', 'two')")
        try group.round()
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in try db.execute(sql: "ALTER TABLE items ADD COLUMN color TEXT DEFAULT 'none'") }
        try await other.write { db in try db.execute(sql: "UPDATE items SET color = 'red' WHERE id = 'i1'") }
        try await other.write { db in try db.execute(sql: "UPDATE items SET color = NULL WHERE id = 'i2'") }
        try await other.write { db in
            try db.execute(sql: "INSERT INTO items(id, name, color) VALUES ('i3', 'three', 'blue')")
        }
        try other.close()
        let reopened = try Store.open(a.path)
        #expect(reopened.adoptedSchemaChange?.addedColumns == ["items": ["color"]])
        let adopted = try #require(try reopened.fetchHistory().last)
        #expect(adopted.contextName == "adopt")
        #expect(adopted.changes.map { $0.key.first?.value } == [.text("i1"), .text("i2"), .text("i3")])
        _ = try group.reopen("a", options: Store.Options())
        _ = try b.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT DEFAULT 'none'"))
        try group.round()
        try group.round()
        let rows = { (replica: TestReplica) in
            try DatabaseQueue(path: replica.path).read { db in
                try Row.fetchAll(db, sql: "SELECT id, name, color FROM items ORDER BY id")
            }
        }
        #expect(try rows(a) == rows(b))
        #expect(try rows(b).map { $0["color"] as String? } == ["red", nil, "blue"])
    }

    /// A replica on the new version fills an added column's default for the rows it receives from
    /// replicas still on the old one: a default that differs per replica (`random()`, the time)
    /// would leave each with another value, and the migration is refused, the store unchanged. A
    /// deterministic expression is taken.
    @Test(arguments: [
        "ALTER TABLE items ADD COLUMN rnd INTEGER DEFAULT (random())",
        """
        CREATE TABLE items_new(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, at TEXT DEFAULT CURRENT_TIMESTAMP);
        INSERT INTO items_new(id, name, qty) SELECT id, name, qty FROM items;
        DROP TABLE items; ALTER TABLE items_new RENAME TO items;
        """,
        "ALTER TABLE items ADD COLUMN day TEXT DEFAULT (date('now'))",
        // SQLite keeps these as a table's DEFAULT, and cannot compute them for a row.
        "ALTER TABLE items ADD COLUMN huge INTEGER DEFAULT 0x10000000000000000",
        "ALTER TABLE items ADD COLUMN over INTEGER DEFAULT (abs(-9223372036854775807 - 1))",
    ])
    func aDefaultThatDiffersPerReplicaIsRefused(_ sql: String) throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        if !sql.hasPrefix("ALTER") {
            _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        }
        let before = try StoreSnapshot.everything(of: a.path)
        #expect {
            try a.store.migrate(Store.Migration(sql: sql))
        } throws: { error in
            guard case StoreError.unsupportedMigration(_, let change) = error else { return false }
            return change.contains("does not compute alike on every replica")
        }
        #expect(try StoreSnapshot.everything(of: a.path) == before)
        // SQLite takes an expression for the default of a column added to an empty table only.
        let deterministic = sql.hasPrefix("ALTER") ? "(abs(-3))" : "-3"
        let summary = try a.store.migrate(
            Store.Migration(sql: "ALTER TABLE items ADD COLUMN n INTEGER DEFAULT \(deterministic)"))
        #expect(summary.addedColumns == ["items": ["n"]])
    }

    /// The same default made by another client (the `sqlite3` shell) is refused as the migration
    /// that would adopt it, and the store opens once it is gone.
    @Test func aDefaultThatDiffersPerReplicaFromAnotherClientIsRefused() async throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in try db.execute(sql: "ALTER TABLE items ADD COLUMN n DEFAULT (random())") }
        #expect {
            try Store.open(a.path)
        } throws: { error in
            guard case StoreError.trackedTableChanged(_, let now) = error else { return false }
            return now.contains("its new column 'n' has DEFAULT random()")
                && now.contains("does not compute alike on every replica")
        }
        try await other.write { db in try db.execute(sql: "ALTER TABLE items DROP COLUMN n") }
        try other.close()
        _ = try Store.open(a.path)
    }

    /// Rows that predate a column of no declared type read its integral real default (0.0) as an
    /// integer, on every replica: adopting the column records none of them.
    @Test func rowsThatPredateAColumnAnotherClientAddedAreNotRecordedForItsDefault() async throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i1', 'one'), ('i2', 'two')")
        let before = try a.store.fetchHistory().count
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in try db.execute(sql: "ALTER TABLE items ADD COLUMN y DEFAULT 0.0") }
        try other.close()
        let reopened = try Store.open(a.path)
        #expect(reopened.adoptedSchemaChange?.addedColumns == ["items": ["y"]])
        #expect(try reopened.fetchHistory().count == before)
    }

    /// A column without a declared type keeps the class a value was written with: a real 0.0
    /// written where the column's default is the integer 0 is not that default, and adoption
    /// records it (Protocol/exchange.md §8.1).
    @Test func aValueEqualToTheDefaultInAnotherClassIsAdopted() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i1', 'one'), ('i2', 'two')")
        try group.round()
        let other = try DatabaseQueue(path: a.path)
        try await other.write { db in
            try db.execute(sql: "ALTER TABLE items ADD COLUMN d DEFAULT 0")
            try db.execute(sql: "UPDATE items SET d = 0.0 WHERE id = 'i1'")
        }
        try other.close()
        let reopened = try Store.open(a.path)
        let adopted = try #require(try reopened.fetchHistory().last)
        #expect(adopted.contextName == "adopt")
        #expect(adopted.changes.map { $0.key.first?.value } == [.text("i1")])
        _ = try group.reopen("a", options: Store.Options())
        _ = try b.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN d DEFAULT 0"))
        for _ in 0..<2 { try group.round() }
        let classes = { (replica: TestReplica) in
            try DatabaseQueue(path: replica.path).read { db in
                try String.fetchAll(db, sql: "SELECT typeof(d) FROM items ORDER BY id")
            }
        }
        #expect(try classes(b) == ["real", "integer"])
        #expect(try classes(a) == classes(b))
    }

    /// A table rebuilt with the same columns (created anew, filled, renamed into place) loses its
    /// triggers with the table it replaces: the migration installs them again, and writes after it
    /// are captured and reach peers. SQLite matches table names whatever their case, so a table
    /// rebuilt under its name in another case (the only way to change the case: `RENAME TO`
    /// refuses it) is the same table.
    @Test(arguments: ["items", "Items"])
    func aTableRebuiltWithTheSameColumnsKeepsCapturingWrites(name: String) throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        try group.round()
        let rebuild = """
            CREATE TABLE items_new(id TEXT PRIMARY KEY, name TEXT, qty INTEGER);
            INSERT INTO items_new SELECT id, name, qty FROM items;
            DROP TABLE items;
            ALTER TABLE items_new RENAME TO \(name);
            """
        for replica in [a, b] { try replica.store.migrate(Store.Migration(sql: rebuild)) }
        let before = try a.store.fetchHistory().count
        _ = try a.store.execute(sql: "UPDATE \(name) SET qty = 2 WHERE id = 'i1'")
        let history = try a.store.fetchHistory()
        #expect(history.count == before + 1)
        #expect(history.last?.changes.map(\.updatedColumns) == [["qty"]])
        try group.round()
        #expect(try group.tableDifferences() == [])
        #expect(try b.tables().rowDigest == (try b.store.rowDigest().digest))
        let qty = try b.store.execute(sql: "SELECT qty FROM items WHERE id = 'i1'").0.first?.rows
        #expect(qty == [[.integer(2)]])
    }

    /// A migration re-creates only the capture triggers whose text changes: adding a column leaves
    /// the delete trigger, which names only the key and the preserved columns, as it was, and it
    /// still records deletes, with their tombstones, of rows written before and after.
    @Test func addingAColumnLeavesTheDeleteTriggerAsItWas() throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        try group.round()
        let triggers = {
            try a.store.execute(
                sql: "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'items' ORDER BY name"
            ).0.first?.rows ?? []
        }
        let before = try triggers()
        let migration = Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT")
        for replica in [a, b] { try replica.store.migrate(migration) }
        let after = try triggers()
        #expect(before.count == 4 && after.count == 4)
        for (old, new) in zip(before, after) {
            let name = old[0]
            #expect((old[1] == new[1]) == (name == .text("tidemark_1_delete")), "\(name)")
        }
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, color) VALUES ('i2', 'two', 'red')")
        try group.round()
        _ = try a.store.execute(sql: "DELETE FROM items")
        try group.round()
        #expect(try group.tableDifferences() == [])
        #expect(try b.store.execute(sql: "SELECT count(*) FROM items").0.first?.rows == [[.integer(0)]])
        let deletes = try a.store.fetchHistory().last?.changes ?? []
        #expect(deletes.count == 2 && deletes.allSatisfy { $0.type == .delete })
    }

    /// Two tracked tables that swap names in one migration keep their identities: each one's rows,
    /// the conflicts listed for it and writes follow it under its new name.
    @Test func twoTablesThatSwapNamesKeepTheirIdentities() throws {
        let schema = """
            CREATE TABLE apples(id TEXT PRIMARY KEY, kind TEXT);
            CREATE TABLE pears(id TEXT PRIMARY KEY, kind TEXT);
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(
            sql:
                "INSERT INTO apples VALUES ('x', 'apple'), ('d1', 'apple'); INSERT INTO pears VALUES ('y', 'pear'), ('d2', 'pear')"
        )
        try group.round()
        // b's edits that a's deletes had not seen: b lists one discarded edit in each table.
        _ = try a.store.execute(sql: "DELETE FROM apples WHERE id = 'd1'; DELETE FROM pears WHERE id = 'd2'")
        _ = try b.store.execute(
            sql: "UPDATE apples SET kind = 'kept?' WHERE id = 'd1'; UPDATE pears SET kind = 'kept?' WHERE id = 'd2'")
        try group.round()
        try group.round()
        let listed = { try Set(b.store.conflicts().map { "\($0.table) \($0.key)" }) }
        #expect(try listed() == [#"apples {"id":"d1"}"#, #"pears {"id":"d2"}"#])
        let swap = Store.Migration(
            sql: "ALTER TABLE apples RENAME TO t; ALTER TABLE pears RENAME TO apples; ALTER TABLE t RENAME TO pears")
        for replica in [a, b] {
            let summary = try replica.store.migrate(swap)
            #expect(summary.renamedTables == ["apples": "pears", "pears": "apples"])
        }
        #expect(try listed() == [#"pears {"id":"d1"}"#, #"apples {"id":"d2"}"#])
        _ = try a.store.execute(sql: "UPDATE pears SET kind = 'red apple' WHERE id = 'x'")
        _ = try b.store.execute(sql: "UPDATE apples SET kind = 'green pear' WHERE id = 'y'")
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        for replica in [a, b] {
            #expect(
                try replica.store.execute(sql: "SELECT id, kind FROM pears UNION ALL SELECT id, kind FROM apples").0
                    .first?.rows == [[.text("x"), .text("red apple")], [.text("y"), .text("green pear")]])
        }
    }

    /// The lineage is checked where a migration extends it: a damaged last version stops the
    /// migration, with the store unchanged, rather than chaining a new version onto it.
    @Test func aMigrationRefusesToExtendADamagedLineage() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT"))
        let queue = try DatabaseQueue(path: a.path)
        try queue.write { db in try db.execute(sql: "UPDATE tidemark_schemas SET id = zeroblob(32)") }
        try queue.close()
        let before = try StoreSnapshot.everything(of: a.path)
        #expect(throws: StoreError.self) {
            try a.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN size INTEGER"))
        }
        #expect(try StoreSnapshot.everything(of: a.path) == before)
    }
}
