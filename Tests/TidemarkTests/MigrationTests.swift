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
        #expect(summary.trackedTables == ["notes"])
        #expect(a.store.trackedTable(named: "items")?.columns == ["id", "name", "qty", "color"])
        _ = try a.store.execute(sql: "UPDATE items SET color = 'red' WHERE id = 'i1'; INSERT INTO notes VALUES ('n1', 'i1', 'hello')")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty, color) VALUES ('i3', 'three', 3, 'blue')")
        _ = try b.store.execute(sql: "UPDATE items SET qty = 20 WHERE id = 'i2'; INSERT INTO items(id, name, qty) VALUES ('b1', 'bee', 7)")
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
        for file in try FileManager.default.contentsOfDirectory(atPath: group.folder + "/\(a.store.replica.id)") where file.hasSuffix(".tmb") {
            try FileManager.default.removeItem(atPath: group.folder + "/\(a.store.replica.id)/" + file)
        }

        // c migrates, making the same version; a plain pull applies what it held.
        #expect(try c.store.migrate(Self.v2).version == version)
        let caught = try group.pull("c", prune: false)
        #expect(caught.warnings.isEmpty, "\(caught.warnings)")
        #expect(caught.waiting.isEmpty)
        #expect(try c.store.execute(sql: "SELECT color FROM items WHERE id = 'i3'").0[0].rows == [[.text("blue")]])
        #expect(try c.store.fetchHistory().contains { $0.replica == a.store.replica.id && $0.schemaVersion == version })
        // b migrates last, then everyone syncs.
        try b.store.migrate(Self.v2)
        for _ in 0..<2 { _ = try group.round(prune: false) }
        let differences = try group.tableDifferences()
        #expect(differences.isEmpty, "\(differences)")
        let items = try a.store.execute(sql: "SELECT id, name, qty, color FROM items ORDER BY id").0[0].rows
        #expect(items == [
            [.text("b1"), .text("bee"), .integer(7), .text("none")],
            [.text("c1"), .text("sea"), .integer(9), .text("none")],
            [.text("i1"), .text("one"), .integer(1), .text("red")],
            [.text("i2"), .text("two"), .integer(20), .text("none")],
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

    /// A row's shared clock (one write set every column) covers only the columns it had: a
    /// concurrent value for a column added later is not mistaken for older than that write.
    @Test func aSharedRowClockDoesNotCoverColumnsAddedAfterIt() async throws {
        let group = try Self.group(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        try a.store.migrate(Self.v2)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty, color) VALUES ('r', 'from a', 1, 'green')")
        try await Task.sleep(nanoseconds: 20_000_000)
        _ = try b.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('r', 'from b', 2)")
        try b.store.migrate(Self.v2)
        for name in group.names { try group.push(name) }
        _ = try group.round(prune: false)
        let differences = try group.tableDifferences()
        #expect(differences.isEmpty, "\(differences)")
        #expect(try b.store.execute(sql: "SELECT name, color FROM items").0[0].rows == [[.text("from b"), .text("green")]])
    }

    @Test func whatTheMigrationSQLWritesIsNotHistory() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let history = try a.store.fetchHistory()
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT; UPDATE items SET color = 'red', qty = 5"))
        // (The migration folds pending changes, which gives them their generation: compare the rest.)
        #expect(try a.store.fetchHistory().map(\.token) == history.map(\.token), "every replica runs the same migration: its writes are not replicated")
        #expect(try a.store.fetchHistory().map(\.changes.count) == history.map(\.changes.count))
        #expect(try a.store.execute(sql: "SELECT qty, color FROM items").0[0].rows == [[.integer(5), .text("red")]])
        _ = try a.store.execute(sql: "UPDATE items SET color = 'blue'")
        #expect(try a.store.fetchHistory().last?.changes.first?.values.map(\.name) == ["color"], "the new column is captured")
    }

    @Test func aMigrationThatChangesOrDropsAKeyOrAColumnIsRefusedAndChangesNothing() throws {
        let group = try Self.group(["a"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let before = try a.everything()
        let refusals: [(String, String)] = [
            (
                "CREATE TABLE items2(id TEXT, name TEXT, qty INTEGER, PRIMARY KEY (id, name)); INSERT INTO items2 SELECT * FROM items; "
                    + "DROP TABLE items; ALTER TABLE items2 RENAME TO items;", "primary key changed"
            ),
            ("ALTER TABLE items DROP COLUMN qty", "'qty' was dropped or renamed"),
            ("ALTER TABLE items RENAME COLUMN name TO title", "'name' was dropped or renamed"),
            ("DROP TABLE items", "dropped or renamed"),
            ("ALTER TABLE items ADD COLUMN nope NOT NULL", "migration failed"),
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
        #expect(try reopened.fetchHistory().last?.changes.first?.values.contains { $0.name == "color" && $0.value == .text("red") } == true)

        // A rename made behind Tidemark's back is reported, naming what it found.
        try await other.write { db in try db.execute(sql: "ALTER TABLE items RENAME COLUMN qty TO quantity") }
        #expect { try Store.open(a.path) } throws: { error in "\(error)".contains("'qty' was dropped or renamed") }
    }
}
