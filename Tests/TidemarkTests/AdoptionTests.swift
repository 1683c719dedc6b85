import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// Protocol/merge.md §1.3: the rows a table holds when it starts being tracked (`init`,
/// `migrate --track`) are recorded by every replica that tracks it, each at its own time, as an
/// adoption whose writes order below every edit. A replica that tracks the table later must not
/// undo the edits another replica made to those rows meanwhile.
@Suite struct AdoptionTests {
    static let schema = "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT);"

    /// A migration that makes a table, fills it and tracks it, made by a, which then edits a row;
    /// b, holding a's changes meanwhile, makes the same migration later.
    @Test func aLaterTrackingOfTheSameRowsKeepsAnEditMadeMeanwhile() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        let migration = Store.Migration(
            sql:
                "CREATE TABLE tags(id TEXT PRIMARY KEY, name TEXT); INSERT INTO tags VALUES ('k1', 'seed'), ('k2', 'seed')",
            track: ["tags"])
        _ = try a.store.migrate(migration)
        _ = try a.store.execute(sql: "UPDATE tags SET name = 'edited on a' WHERE id = 'k1'")
        try group.push("a")
        try group.pull("b", prune: false)
        _ = try b.store.migrate(migration)
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        #expect(
            try b.tables()["tags"]?.rows == [[.text("k1"), .text("edited on a")], [.text("k2"), .text("seed")]])
        #expect(try b.store.conflicts().isEmpty && a.store.conflicts().isEmpty)
    }

    /// A table untracked on both replicas and tracked again: a tracks it first and edits a row;
    /// b tracks it after, its rows as they were.
    @Test func aTableTrackedAgainKeepsAnEditMadeSince() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items VALUES ('i1', 'one')")
        try group.round()
        for replica in [a, b] { _ = try replica.store.migrate(Store.Migration(untrack: ["items"])) }
        _ = try a.store.migrate(Store.Migration(track: ["items"]))
        _ = try a.store.execute(sql: "UPDATE items SET name = 'edited on a' WHERE id = 'i1'")
        try group.push("a")
        try group.pull("b", prune: false)
        _ = try b.store.migrate(Store.Migration(track: ["items"]))
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        #expect(try b.tables()["items"]?.rows == [[.text("i1"), .text("edited on a")]])
    }

    /// Two devices made from the same seeded database: the second, made after the first edited a
    /// seed row, joins and keeps that edit.
    @Test func aStoreMadeLaterFromTheSameSeedKeepsAnEditMadeMeanwhile() throws {
        let seeded = Self.schema + " INSERT INTO items VALUES ('i1', 'seed'), ('i2', 'seed');"
        let group = try ExchangeGroup(["a"], schema: seeded, preserve: [])
        _ = try group["a"].store.execute(sql: "UPDATE items SET name = 'edited on a' WHERE id = 'i1'")
        try group.push("a")
        try group.add("b")
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        #expect(
            try group["b"].tables()["items"]?.rows == [
                [.text("i1"), .text("edited on a")], [.text("i2"), .text("seed")],
            ])
    }

    /// Rows two replicas adopted with different values (each device's own data under the same
    /// key) end the same everywhere: the later adoption's, as between any two writes.
    @Test func rowsAdoptedWithDifferentValuesConverge() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        for (replica, value) in [(a, "from a"), (b, "from b")] {
            _ = try replica.store.migrate(
                Store.Migration(
                    sql:
                        "CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT); INSERT INTO notes VALUES ('n', '\(value)')",
                    track: ["notes"]))
        }
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        #expect(try a.tables()["notes"]?.rows == [[.text("n"), .text("from b")]])
    }

    /// An app cannot write as an adoption: the author and context name that mark one are refused.
    @Test func anAppCannotWriteAsAnAdoption() throws {
        let group = try ExchangeGroup(["a"], schema: Self.schema, preserve: [])
        #expect(throws: StoreError.self) {
            try group["a"].store.write(author: "tidemark", contextName: "adopt") { db in
                try db.execute(sql: "INSERT INTO items VALUES ('x', 'y')")
            }
        }
    }
}
