import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// Migrations an app runs through its own GRDB `DatabaseMigrator`, with `Store.migrate(_:in:)`:
/// tracking follows in the migration's transaction, peers that make the same change by SQL make
/// the same schema version, and a refused migration leaves the app's database as it was.
@Suite struct AppMigrationTests {
    typealias Fixture = AppWriterTests.Fixture

    /// The app's second migration: a nullable column, a new table to track with a row in it.
    static func v2(_ store: Store) -> @Sendable (Database) throws -> Void {
        { db in
            try store.migrate(
                Store.Migration(track: ["labels"]) { db in
                    try db.alter(table: "notes") { t in t.add(column: "color", .text) }
                    try db.create(table: "labels") { t in
                        t.primaryKey("id", .text)
                        t.column("name", .text)
                    }
                    try db.execute(sql: "INSERT INTO labels(id, name) VALUES ('l1', 'home')")
                }, in: db)
        }
    }

    /// The same change as `v2`, as SQL for `sync migrate`.
    static let v2SQL = """
        ALTER TABLE notes ADD COLUMN color TEXT;
        CREATE TABLE labels(id TEXT PRIMARY KEY NOT NULL, name TEXT);
        INSERT INTO labels(id, name) VALUES ('l1', 'home');
        """

    static func migrator(_ store: Store, through last: String = "v2") -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.execute(sql: AppWriterTests.schema) }
        migrator.registerMigration("v2", migrate: v2(store))
        if last == "v3" {
            migrator.registerMigration("v3") { db in
                try store.migrate(
                    Store.Migration { db in try db.alter(table: "notes") { t in t.drop(column: "title") } }, in: db)
            }
        }
        return migrator
    }

    /// The user tables whose row digest the store keeps (it counts the others again when next asked).
    static func keptDigests(_ pool: DatabasePool) throws -> Set<String> {
        Set(
            try pool.read { db in
                try String.fetchAll(
                    db, sql: "SELECT t.name FROM tidemark_digests AS d JOIN tidemark_tables AS t ON t.id = d.table_id")
            })
    }

    @Test func aMigratorMigrationAdaptsTrackingAndPeersMakingItBySQLConverge() throws {
        let f = try Fixture()
        try f.app.setDefaultTransactionAuthor("app", contextName: "ui")
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'first')") }
        _ = try f.appPulls()
        #expect(try Self.keptDigests(f.pool).contains("notes"))

        try Self.migrator(f.app).migrate(f.pool)
        let applied = try f.pool.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") }
        #expect(applied == ["v1", "v2"])
        let version = try #require(try f.app.status().lineage.last)
        #expect(f.app.trackedTable(named: "notes")?.columns.contains("color") == true)
        #expect(f.app.trackedTable(named: "labels") != nil)
        // The migration wrote a row (of labels) while notes gained a column the capture triggers
        // did not know yet, so notes is counted again; the digest is what the rows give.
        #expect(try !Self.keptDigests(f.pool).contains("notes"))
        let rows = try StoreSnapshot.trackedTables(of: f.directory.file("app.sqlite"))
        #expect(try f.app.rowDigest().digest == rows.rowDigest)
        // The SQL's own row is recorded as the new table's first rows, with nothing else.
        let history = try f.app.fetchHistory()
        let last = try #require(history.last)
        #expect(last.contextName == "adopt")
        #expect(last.changes.map(\.table) == ["labels"])
        #expect(try f.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tidemark_authorship") } == 0)

        // The peer makes the same change by SQL, and both sync under the same version.
        let peerVersion = try f.peer.store.migrate(Store.Migration(sql: Self.v2SQL, track: ["labels"])).version
        #expect(peerVersion == version)
        try f.pool.write { db in
            try db.execute(sql: "UPDATE notes SET color = 'red' WHERE id = 'n1'")
        }
        _ = try f.app.push(to: f.folder, key: f.appKey)
        _ = try f.peer.store.pull(from: f.folder, key: f.peer.key)
        _ = try f.peer.store.execute(sql: "INSERT INTO labels(id, name) VALUES ('l2', 'work')")
        try f.peerSyncs()
        _ = try f.appPulls()
        let appRows = try f.pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, title, color FROM notes UNION ALL SELECT id, name, NULL FROM labels ORDER BY 1")
        }
        let peerQueue = try DatabaseQueue(path: f.peer.path)
        defer { try? peerQueue.close() }
        let peerRows = try peerQueue.read { db in
            try Row.fetchAll(
                db, sql: "SELECT id, title, color FROM notes UNION ALL SELECT id, name, NULL FROM labels ORDER BY 1")
        }
        #expect(appRows == peerRows)
        #expect(appRows.count == 3)
        #expect(appRows.last?["id"] == "n1")
        #expect(appRows.last?["color"] == "red")
    }

    @Test func aMigratorMigrationCanDropAColumnTheCaptureTriggersName() throws {
        let f = try Fixture()
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title, tag) VALUES ('n1', 'first', 't')") }
        try Self.migrator(f.app, through: "v3").migrate(f.pool)
        #expect(f.app.trackedTable(named: "notes")?.columns == ["id", "tag", "color"])
        #expect(try f.app.status().lineage.count == 2)
        try f.pool.write { db in try db.execute(sql: "UPDATE notes SET color = 'blue' WHERE id = 'n1'") }
        let change = try #require(try f.app.fetchHistory().last?.changes.first)
        #expect(change.table == "notes")
        #expect(change.values.map(\.name) == ["color"])
        #expect(change.values.first?.value == .text("blue"))
    }

    @Test func aRefusedMigrationRollsTheMigratorsMigrationBackWhole() throws {
        let f = try Fixture()
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'first')") }
        _ = try f.appPulls()
        _ = try f.pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        let before = try StoreBytes(f.directory.file("app.sqlite"))
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.execute(sql: AppWriterTests.schema) }
        migrator.registerMigration("v2") { [app = f.app] db in
            try app.migrate(Store.Migration(sql: "ALTER TABLE notes RENAME COLUMN id TO uid"), in: db)
        }
        #expect {
            try migrator.migrate(f.pool)
        } throws: { error in
            guard case StoreError.unsupportedMigration(let table, _) = error else { return false }
            return table == "notes"
        }
        _ = try f.pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        #expect(try StoreBytes(f.directory.file("app.sqlite")) == before)
        #expect(f.app.trackedTable(named: "notes")?.keyColumns == ["id"])
    }

    /// What a migration's SQL writes is not history, and neither is the author mark the app's
    /// writer put on it: the next writes, the app's and another client's, keep their own authors.
    @Test func aMigrationThatWritesRowsLeavesNoAuthorMarkBehind() throws {
        let f = try Fixture()
        try f.app.setDefaultTransactionAuthor("app", contextName: "ui")
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'first')") }
        try f.app.migrate(Store.Migration(sql: "UPDATE notes SET title = 'backfilled'"))
        _ = try f.pool.write { db in
            try f.app.migrate(Store.Migration(sql: "UPDATE notes SET tag = 'kept'"), in: db)
        }
        #expect(try f.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tidemark_authorship") } == 0)
        // Another client writes first, then the app.
        let other = try DatabaseQueue(path: f.directory.file("app.sqlite"))
        try other.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n2', 'shell')") }
        try other.close()
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n3', 'app')") }
        let written = try f.app.fetchHistory().suffix(2)
        #expect(written.map { $0.changes.first?.key.first?.value } == [.text("n2"), .text("n3")])
        #expect(written.map(\.author) == [nil, "app"])
    }

    /// The app changed a table itself earlier in the migration's transaction: the store's
    /// migration reads that table again and captures its new column.
    @Test func aTableTheAppChangedEarlierInTheTransactionIsReadAgain() throws {
        let f = try Fixture()
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.execute(sql: AppWriterTests.schema) }
        migrator.registerMigration("v2") { [app = f.app] db in
            try db.alter(table: "notes") { t in t.add(column: "color", .text) }
            try app.migrate(
                Store.Migration(track: ["labels"]) { db in
                    try db.create(table: "labels") { t in t.primaryKey("id", .text) }
                }, in: db)
        }
        try migrator.migrate(f.pool)
        #expect(f.app.trackedTable(named: "notes")?.columns == ["id", "title", "tag", "color"])
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title, color) VALUES ('n1', 'a', 'red')") }
        let change = try #require(try f.app.fetchHistory().last?.changes.first)
        #expect(change.values.first { $0.name == "color" }?.value == .text("red"))
    }

    /// The app writes, migrates and writes again in one transaction with an author set: both
    /// writes keep that author.
    @Test func writesAroundAMigrationInOneTransactionKeepTheirAuthor() throws {
        let f = try Fixture()
        try f.app.setDefaultTransactionAuthor("app", contextName: "ui")
        try f.pool.write { db in
            try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'before')")
            _ = try f.app.migrate(Store.Migration(sql: "ALTER TABLE notes ADD COLUMN color TEXT"), in: db)
            try db.execute(sql: "INSERT INTO notes(id, title, color) VALUES ('n2', 'after', 'red')")
        }
        let written = try f.app.fetchHistory().filter { $0.contextName != "adopt" }
        #expect(written.map { $0.changes.first?.key.first?.value } == [.text("n1"), .text("n2")])
        #expect(written.map(\.author) == ["app", "app"])
    }

    /// A savepoint around the migration rolls back, and the transaction commits: the store's
    /// tables are as the database has them.
    @Test func aMigrationInASavepointRolledBackLeavesTrackingAsItWas() throws {
        let f = try Fixture()
        try f.pool.write { db in
            try db.inSavepoint {
                _ = try f.app.migrate(
                    Store.Migration(track: ["labels"]) { db in
                        try db.create(table: "labels") { t in t.primaryKey("id", .text) }
                    }, in: db)
                return .rollback
            }
            try db.execute(sql: "CREATE TABLE scratch(x)")
        }
        #expect(f.app.trackedTable(named: "labels") == nil)
        #expect(try f.app.rowDigest().digest["notes"].rows == 0)
    }

    struct Abandoned: Error {}

    /// The caller rolls its transaction back after the migration: the store's tables are as they
    /// were, in the database and in what the store says of them.
    @Test func aMigrationTheCallerRollsBackLeavesTrackingAsItWas() throws {
        let f = try Fixture()
        #expect(throws: Abandoned.self) {
            try f.pool.write { db in
                try f.app.migrate(
                    Store.Migration(track: ["labels"]) { db in
                        try db.create(table: "labels") { t in t.primaryKey("id", .text) }
                    }, in: db)
                #expect(f.app.trackedTable(named: "labels") != nil)
                throw Abandoned()
            }
        }
        #expect(f.app.trackedTable(named: "labels") == nil)
        #expect(try f.app.status().lineage.isEmpty)
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'after')") }
        #expect(try f.app.fetchHistory().last?.changes.map(\.table) == ["notes"])
    }

    @Test func aStoreOpenedByPathIsNotMigratedOnAnotherConnection() throws {
        let f = try Fixture()
        let queue = try DatabaseQueue(path: f.peer.path)
        defer { try? queue.close() }
        #expect {
            try queue.write { db in
                try f.peer.store.migrate(Store.Migration(sql: "ALTER TABLE notes ADD COLUMN color TEXT"), in: db)
            }
        } throws: { error in
            guard case StoreError.notAttached = error else { return false }
            return true
        }
        #expect(f.peer.store.trackedTable(named: "notes")?.columns == ["id", "title", "tag"])
    }

    /// A plain `DatabaseMigrator` migration, without `Store.migrate(_:in:)`, adds a column while
    /// the store is open, as the documented launch order has it: the change is adopted as it
    /// commits, so the app's next writes to the column reach history and the peer.
    @Test func aColumnAPlainMigrationAddsWhileTheStoreIsOpenIsCapturedAtOnce() throws {
        let f = try Fixture()
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'a')") }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.execute(sql: AppWriterTests.schema) }
        migrator.registerMigration("v2") { db in try db.alter(table: "notes") { t in t.add(column: "color", .text) } }
        try migrator.migrate(f.pool)
        #expect(f.app.trackedTable(named: "notes")?.columns == ["id", "title", "tag", "color"])
        #expect(f.app.adoptedSchemaChange?.addedColumns == ["notes": ["color"]])
        try f.pool.write { db in try db.execute(sql: "UPDATE notes SET color = 'red' WHERE id = 'n1'") }
        try f.pool.write { db in
            try db.execute(sql: "INSERT INTO notes(id, title, color) VALUES ('n2', 'b', 'blue')")
        }
        let colors = try f.app.fetchHistory().flatMap(\.changes).flatMap(\.values).filter { $0.name == "color" }
        #expect(colors.map(\.value) == [.text("red"), .text("blue")])

        _ = try f.peer.store.migrate(Store.Migration(sql: "ALTER TABLE notes ADD COLUMN color TEXT"))
        _ = try f.app.push(to: f.folder, key: f.appKey)
        _ = try f.peer.store.pull(from: f.folder, key: f.peer.key)
        let peerQueue = try DatabaseQueue(path: f.peer.path)
        defer { try? peerQueue.close() }
        let peerColors = try peerQueue.read { db in
            try String?.fetchAll(db, sql: "SELECT color FROM notes ORDER BY id")
        }
        #expect(peerColors == ["red", "blue"])
    }

    /// The app rebuilds a tracked table with the same columns (create, copy, drop, rename), which
    /// drops the capture triggers with the old table: they are put back as the rebuild commits.
    @Test func aTableThePlainMigrationRebuildsKeepsItsWritesCaptured() throws {
        let f = try Fixture()
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, title) VALUES ('n1', 'a')") }
        try f.pool.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE notes_new(id TEXT PRIMARY KEY, title TEXT CHECK (length(title) < 100), tag TEXT UNIQUE);
                    INSERT INTO notes_new SELECT * FROM notes;
                    DROP TABLE notes;
                    ALTER TABLE notes_new RENAME TO notes;
                    """)
        }
        try f.pool.write { db in try db.execute(sql: "UPDATE notes SET title = 'after' WHERE id = 'n1'") }
        let change = try #require(try f.app.fetchHistory().last?.changes.first)
        #expect(change.values.map(\.name) == ["title"])
        #expect(change.values.first?.value == .text("after"))
    }

    /// One plain migration adds a column to one tracked table and rebuilds another with the same
    /// columns: both keep capturing the app's writes once it commits.
    @Test func aPlainMigrationThatAlsoRebuildsAnotherTableKeepsBothCaptured() throws {
        let f = try Fixture()
        try f.app.migrate(
            Store.Migration(sql: "CREATE TABLE labels(id TEXT PRIMARY KEY, name TEXT)", track: ["labels"]))
        try f.pool.write { db in
            try db.execute(
                sql: """
                    ALTER TABLE notes ADD COLUMN color TEXT;
                    CREATE TABLE labels_new(id TEXT PRIMARY KEY, name TEXT CHECK (length(name) < 50));
                    INSERT INTO labels_new SELECT * FROM labels;
                    DROP TABLE labels;
                    ALTER TABLE labels_new RENAME TO labels;
                    """)
        }
        #expect(f.app.adoptedSchemaChange?.addedColumns == ["notes": ["color"]])
        try f.pool.write { db in try db.execute(sql: "INSERT INTO labels(id, name) VALUES ('l1', 'home')") }
        try f.pool.write { db in try db.execute(sql: "INSERT INTO notes(id, color) VALUES ('n1', 'red')") }
        let written = try f.app.fetchHistory().suffix(2)
        #expect(written.map { $0.changes.map(\.table) } == [["labels"], ["notes"]])
    }
}
