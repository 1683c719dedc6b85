import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// An application's foreign-key actions (`ON UPDATE CASCADE`, `ON DELETE SET NULL`, …) run on every
/// replica as the merge writes the parent, behind the merge's back (Protocol/merge.md §5.3). What
/// they leave must be what the writer's transactions left, whatever order the changes arrive in.
@Suite struct ForeignKeyActionTests {
    /// A child table that sorts before its parent and follows its parent's `code` on update.
    static let schema = """
        CREATE TABLE a_child(id TEXT PRIMARY KEY, pcode TEXT REFERENCES z_parent(code) ON UPDATE CASCADE);
        CREATE TABLE z_parent(id TEXT PRIMARY KEY, code TEXT NOT NULL UNIQUE);
        """

    /// The writer renames a parent's code, which cascades into its child, then gives the old code to
    /// a new parent and moves the child back to it. A replica that catches up from a snapshot holds
    /// the child as the writer left it, not cascaded once more by the parent's rename.
    @Test func aSnapshotLeavesAChildAsTheWriterLeftIt() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO z_parent VALUES ('p1', 'x'); INSERT INTO a_child VALUES ('c1', 'x')")
        let first = group.directory.file("first.tms")
        _ = try a.store.exportSnapshot(to: first, key: a.key)
        _ = try b.store.importBundle(at: first)
        _ = try a.store.execute(
            sql: """
                UPDATE z_parent SET code = 'y' WHERE id = 'p1';
                INSERT INTO z_parent VALUES ('p2', 'x');
                UPDATE a_child SET pcode = 'x' WHERE id = 'c1';
                """)
        let second = group.directory.file("second.tms")
        _ = try a.store.exportSnapshot(to: second, key: a.key)
        _ = try b.store.importBundle(at: second)
        #expect(try b.tables()["a_child"]?.rows == [[.text("c1"), .text("x")]])
        #expect(try b.tables().differences(from: try a.tables(), mine: "b", theirs: "a").isEmpty)
        #expect(try b.store.rowDigest().digest == (try b.tables().rowDigest))
        #expect(try b.store.conflicts().isEmpty)
    }

    /// The same writes reaching the other replica as a bundle: the changes come in the order they
    /// were made, the cascade's among them.
    @Test func aBundleLeavesAChildAsTheWriterLeftIt() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO z_parent VALUES ('p1', 'x'); INSERT INTO a_child VALUES ('c1', 'x')")
        try group.round()
        _ = try a.store.execute(
            sql: """
                UPDATE z_parent SET code = 'y' WHERE id = 'p1';
                INSERT INTO z_parent VALUES ('p2', 'x');
                UPDATE a_child SET pcode = 'x' WHERE id = 'c1';
                """)
        try group.round()
        #expect(try b.tables()["a_child"]?.rows == [[.text("c1"), .text("x")]])
        #expect(try group.tableDifferences() == [])
        #expect(try b.store.rowDigest().digest == (try b.tables().rowDigest))
    }

    /// One replica renames a parent's code while the other points a child at the old code: the
    /// rename cascades on the second replica, unrecorded, and the child's new value names no parent
    /// on the first. The replicas must end alike, with the child's value listed.
    @Test func aChildPointedAtARenamedCodeConverges() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(
            sql: "INSERT INTO z_parent VALUES ('p1', 'x'), ('p9', 'q'); INSERT INTO a_child VALUES ('c1', 'q')")
        try group.round()
        _ = try a.store.execute(sql: "UPDATE z_parent SET code = 'y' WHERE id = 'p1'")
        _ = try b.store.execute(sql: "UPDATE a_child SET pcode = 'x' WHERE id = 'c1'")
        try group.round()
        try group.round()
        try group.round()
        // On a the child's new code names no parent: it is settled as an orphan, and b follows.
        #expect(try group.tableDifferences() == [])
        #expect(try a.tables()["a_child"]?.rows == [])
        let conflict = try #require(try a.store.conflicts().first)
        #expect(conflict.kind == "foreign_key" && conflict.row == #"{"pcode":"x"}"#, "\(conflict)")
        #expect(conflict.detail.contains("changed"), "\(conflict)")
        for replica in group.replicas {
            #expect(try replica.store.rowDigest().digest == (try replica.tables().rowDigest), "\(replica.name)")
        }
    }

    /// Replica b takes `first` from a by snapshot, then a runs `second` and b takes a snapshot
    /// again; returns the group.
    static func catchUp(schema: String, first: String, second: String) throws -> ExchangeGroup {
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        for (name, sql) in [("first", first), ("second", second)] {
            _ = try a.store.execute(sql: sql)
            let file = group.directory.file("\(name).tms")
            _ = try a.store.exportSnapshot(to: file, key: a.key)
            _ = try b.store.importBundle(at: file)
        }
        return group
    }

    /// The writer moves a child from one parent to another, then deletes the first parent, whose
    /// delete cascades: the child, moved away, stays. A replica that catches up from a snapshot
    /// must not merge the parent's tombstone while it still holds the child under that parent.
    @Test(arguments: [
        "CREATE TABLE lists(id TEXT PRIMARY KEY); CREATE TABLE entries(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id) ON DELETE CASCADE);",
        "CREATE TABLE entries(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id) ON DELETE CASCADE); CREATE TABLE lists(id TEXT PRIMARY KEY);",
    ])
    func aSnapshotKeepsAChildMovedAwayFromADeletedParent(schema: String) throws {
        let group = try Self.catchUp(
            schema: schema, first: "INSERT INTO lists VALUES ('l1'), ('l2'); INSERT INTO entries VALUES ('e', 'l1')",
            second: "UPDATE entries SET list = 'l2' WHERE id = 'e'; DELETE FROM lists WHERE id = 'l1'")
        let b = group["b"]
        #expect(try b.tables()["entries"]?.rows == [[.text("e"), .text("l2")]])
        #expect(try b.tables().differences(from: try group["a"].tables(), mine: "b", theirs: "a").isEmpty)
        #expect(try b.store.conflicts().isEmpty)
    }

    /// The same in a tree whose nodes reference their parent node in the same table: a document
    /// moved out of a folder, then the folder deleted.
    @Test func aSnapshotKeepsANodeMovedAwayFromADeletedFolder() throws {
        let group = try Self.catchUp(
            schema: "CREATE TABLE n(id TEXT PRIMARY KEY, parent TEXT REFERENCES n(id) ON DELETE CASCADE, label TEXT);",
            first: "INSERT INTO n VALUES ('root', NULL, 'root'), ('n1', 'root', 'folder'), ('n2', 'n1', 'doc')",
            second: "UPDATE n SET parent = 'root' WHERE id = 'n2'; DELETE FROM n WHERE id = 'n1'")
        let b = group["b"]
        #expect(try b.tables()["n"]?.rows.map { $0[0] } == [.text("n2"), .text("root")])
        #expect(try b.tables().differences(from: try group["a"].tables(), mine: "b", theirs: "a").isEmpty)
        #expect(try b.store.conflicts().isEmpty)
    }
}
