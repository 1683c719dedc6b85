import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// A migration runs as SQLite's procedure for changing a table says, and as GRDB's migrator runs
/// one: foreign keys are not enforced while it runs and are checked before it commits.
@Suite struct MigrationForeignKeyTests {
    static let schema = """
        CREATE TABLE lists(id TEXT PRIMARY KEY, name TEXT);
        CREATE TABLE items(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id) ON DELETE CASCADE, what TEXT);
        """
    /// The parent table rebuilt to add a CHECK constraint: its DROP would cascade into every item.
    static let rebuild = Store.Migration(
        sql: """
            CREATE TABLE lists_new(id TEXT PRIMARY KEY, name TEXT NOT NULL CHECK(name <> ''));
            INSERT INTO lists_new SELECT id, name FROM lists;
            DROP TABLE lists;
            ALTER TABLE lists_new RENAME TO lists;
            """)

    static func items(_ replica: TestReplica) throws -> [[SQLValue]] {
        try replica.store.execute(sql: "SELECT id, list, what FROM items ORDER BY id").0[0].rows
    }

    @Test func aParentTableRebuiltByAMigrationKeepsItsChildRowsOnEveryReplica() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(
            sql:
                "INSERT INTO lists VALUES ('l1', 'groceries'); INSERT INTO items VALUES ('i1', 'l1', 'milk'), ('i2', 'l1', 'eggs')"
        )
        try group.round()
        try a.store.migrate(Self.rebuild)
        #expect(
            try Self.items(a) == [
                [.text("i1"), .text("l1"), .text("milk")], [.text("i2"), .text("l1"), .text("eggs")],
            ])
        // Enforced again once the migration is over.
        #expect(throws: StoreError.self) {
            try a.store.execute(sql: "INSERT INTO items VALUES ('i3', 'nowhere', 'lost')")
        }
        try b.store.migrate(Self.rebuild)
        _ = try b.store.execute(sql: "UPDATE items SET what = 'oat milk' WHERE id = 'i1'")
        try group.round()
        try group.round()
        try group.expectConverged()
        #expect(
            try Self.items(a) == [
                [.text("i1"), .text("l1"), .text("oat milk")], [.text("i2"), .text("l1"), .text("eggs")],
            ])
        #expect(try a.store.conflicts().isEmpty)
        #expect(try b.store.conflicts().isEmpty)
    }

    @Test func aMigrationThatLeavesARowReferringNowhereIsRefusedAndChangesNothing() throws {
        let group = try ExchangeGroup(["a"], schema: Self.schema, preserve: [])
        let a = group["a"]
        _ = try a.store.execute(
            sql: "INSERT INTO lists VALUES ('l1', 'groceries'); INSERT INTO items VALUES ('i1', 'l1', 'milk')")
        let before = try a.everything()
        #expect {
            try a.store.migrate(Store.Migration(sql: "CREATE TABLE tags(id TEXT PRIMARY KEY); DELETE FROM lists"))
        } throws: { error in
            "\(error)".contains("row 1 of 'items' refers to a row of 'lists' that is not there")
                && "\(error)".contains("PRAGMA foreign_key_check")
        }
        #expect(try a.everything() == before)
        #expect(throws: StoreError.self) {
            try a.store.execute(sql: "INSERT INTO items VALUES ('i3', 'nowhere', 'lost')")
        }
    }
}
