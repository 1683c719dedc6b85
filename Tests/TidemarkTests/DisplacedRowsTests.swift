import Foundation
import GRDB
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// Rows SQLite deletes under the REPLACE conflict resolution through a unique index other than the
/// key (`DisplacedRows`): SQLite fires no delete trigger for them, so capture records them itself,
/// and every replica ends with the same rows.
@Suite struct DisplacedRowsTests {
    static let schema = """
        CREATE TABLE users(id TEXT PRIMARY KEY, email TEXT UNIQUE, name TEXT, handle TEXT UNIQUE ON CONFLICT REPLACE);
        CREATE TABLE pairs(a TEXT NOT NULL, b TEXT NOT NULL, note TEXT, PRIMARY KEY(a, b), UNIQUE(note COLLATE NOCASE));
        """

    /// The rows of `table` in `replica`, ordered by key.
    static func rows(_ replica: TestReplica, _ sql: String) throws -> [[SQLValue]] {
        try replica.store.execute(sql: sql).0[0].rows
    }

    /// Runs `sql` through a plain connection to the store's file, as another SQLite client does.
    static func asAnotherClient(_ replica: TestReplica, _ sql: String) throws {
        let other = try DatabaseQueue(path: replica.path)
        try other.write { db in try db.execute(sql: sql) }
        try other.close()
    }

    /// The deletes history holds for `table`, by key text.
    static func deletes(_ replica: TestReplica, of table: String) throws -> [String] {
        try replica.store.fetchHistory().flatMap(\.changes.rows)
            .filter { $0.type == .delete && $0.table == table }
            .map { change in
                change.key.map { column in
                    if case .text(let text) = column.value { return text }
                    return "\(column.value)"
                }.joined(separator: ",")
            }
    }

    @Test func aRowReplacedThroughAUniqueColumnIsDeletedOnEveryReplica() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: ["users.name"])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(
            sql: """
                INSERT INTO users VALUES ('u1', 'x@y', 'one', 'h1'), ('u2', 'z@y', 'two', 'h2'), ('u3', 'w@y', 'three', 'h3');
                INSERT INTO pairs VALUES ('p', 'q', 'Note');
                """)
        _ = try group.round(prune: false)

        // Through the library, through another client, by an update, and by a column declared
        // ON CONFLICT REPLACE under a plain INSERT; a composite key displaced through a NOCASE index.
        _ = try a.store.execute(sql: "INSERT OR REPLACE INTO users VALUES ('u4', 'x@y', 'four', 'h4')")
        try Self.asAnotherClient(a, "UPDATE OR REPLACE users SET email = 'z@y' WHERE id = 'u4'")
        try Self.asAnotherClient(a, "INSERT INTO users VALUES ('u5', 'v@y', 'five', 'h3')")
        _ = try a.store.execute(sql: "INSERT OR REPLACE INTO pairs VALUES ('r', 's', 'NOTE')")
        // With recursive triggers on, SQLite fires the delete trigger too: still one delete.
        let recursive = try DatabaseQueue(path: a.path)
        try recursive.inDatabase { db in
            try db.execute(sql: "PRAGMA recursive_triggers = ON")
            try db.execute(
                sql: "INSERT INTO users VALUES ('u6', 'w@y', 'six', 'h6'); DELETE FROM users WHERE id = 'u6'")
            try db.execute(sql: "INSERT OR REPLACE INTO users VALUES ('u7', 'v@y', 'seven', 'h7')")
        }
        try recursive.close()
        _ = try group.round(prune: false)

        let users = "SELECT id, email, name, handle FROM users ORDER BY id"
        let expected: [[SQLValue]] = [
            [.text("u4"), .text("z@y"), .text("four"), .text("h4")],
            [.text("u7"), .text("v@y"), .text("seven"), .text("h7")],
        ]
        #expect(try Self.rows(a, users) == expected)
        #expect(try Self.rows(b, users) == expected, "the displaced rows are deleted on b too")
        #expect(try Self.rows(b, "SELECT a, b, note FROM pairs") == [[.text("r"), .text("s"), .text("NOTE")]])
        #expect(try group.tableDifferences().isEmpty)
        #expect(try Self.deletes(a, of: "users") == ["u1", "u2", "u3", "u6", "u5"], "each displaced row deleted once")
        #expect(try Self.deletes(a, of: "pairs") == ["p,q"])
        // The tombstone keeps the preserved column, as a delete's does.
        let tombstone = try #require(
            try a.store.fetchHistory().flatMap(\.changes.rows).first { $0.type == .delete && $0.table == "users" })
        #expect(tombstone.tombstone?.map(\.name) == ["id", "name"])
        #expect(tombstone.tombstone?.last?.value == .text("one"))
        #expect(try b.store.conflicts().isEmpty, "no insert lost to a value its peer still held")
    }

    @Test func aStatementThatKeepsTheOtherRowRecordsNoDelete() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO users VALUES ('u1', 'x@y', 'one', NULL), ('u2', 'z@y', 'two', NULL)")
        _ = try group.round(prune: false)

        // Ignored, upserted, refused: u1 stays (one transaction of another client). Then u2 is deleted on its own, and a later
        // insert must not take the copy an ignored insert left behind for a displaced row.
        try Self.asAnotherClient(
            a,
            """
            INSERT OR IGNORE INTO users VALUES ('u3', 'x@y', 'three', NULL);
            INSERT INTO users VALUES ('u4', 'x@y', 'four', NULL) ON CONFLICT(email) DO UPDATE SET name = 'upserted';
            INSERT OR IGNORE INTO users VALUES ('u5', 'z@y', 'five', NULL);
            DELETE FROM users WHERE id = 'u2';
            INSERT INTO users VALUES ('u5', 'z@y', 'five', NULL);
            """)
        #expect(throws: (any Error).self) {
            try a.store.execute(sql: "INSERT INTO users VALUES ('u6', 'x@y', 'six', NULL)")
        }
        _ = try group.round(prune: false)

        let expected: [[SQLValue]] = [[.text("u1"), .text("upserted")], [.text("u5"), .text("five")]]
        #expect(try Self.rows(a, "SELECT id, name FROM users ORDER BY id") == expected)
        #expect(try Self.rows(b, "SELECT id, name FROM users ORDER BY id") == expected)
        #expect(try Self.deletes(a, of: "users") == ["u2"], "one delete, the one made")
        #expect(try group.tableDifferences().isEmpty)
    }

    /// Writes nested between the BEFORE and AFTER triggers of the row that displaces another (a
    /// foreign key's SET NULL, an app's BEFORE trigger writing the table, an app's AFTER trigger
    /// touching the same row) emptied the copies of the displaced rows, whose deletes then went
    /// unrecorded. Copies are tagged with the key of the row written.
    @Test func writesNestedBetweenTheTriggersOfARowKeepItsCopies() async throws {
        let schema = """
            CREATE TABLE people(id TEXT PRIMARY KEY, email TEXT UNIQUE, parent TEXT REFERENCES people(id) ON DELETE SET NULL);
            CREATE TABLE teams(id TEXT PRIMARY KEY, email TEXT UNIQUE, grp TEXT, current INTEGER DEFAULT 1);
            CREATE TRIGGER one_current BEFORE INSERT ON teams BEGIN
              UPDATE teams SET current = 0 WHERE grp = NEW.grp AND current = 1;
            END;
            CREATE TABLE notes(id TEXT PRIMARY KEY, email TEXT UNIQUE ON CONFLICT REPLACE, touched INTEGER DEFAULT 0);
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        // A trigger made after the capture triggers fires before them.
        let touch = Store.Migration(
            sql: "CREATE TRIGGER touch AFTER UPDATE OF email ON notes BEGIN "
                + "UPDATE notes SET touched = touched + 1 WHERE id = NEW.id; END;")
        try a.store.migrate(touch)
        try b.store.migrate(touch)
        _ = try a.store.execute(
            sql: """
                INSERT INTO people VALUES ('p1', 'x@y', NULL), ('p2', 'z@y', 'p1');
                INSERT INTO teams(id, email, grp) VALUES ('t1', 'x@y', 'g');
                INSERT INTO notes(id, email) VALUES ('n1', 'x@y'), ('n2', 'z@y');
                """)
        _ = try group.round(prune: false)
        _ = try a.store.execute(
            sql: """
                INSERT OR REPLACE INTO people VALUES ('p3', 'x@y', NULL);
                INSERT OR REPLACE INTO teams(id, email, grp) VALUES ('t2', 'x@y', 'g');
                UPDATE notes SET email = 'x@y' WHERE id = 'n2';
                """)
        _ = try group.round(prune: false)

        #expect(try Self.deletes(a, of: "people") == ["p1"])
        #expect(try Self.deletes(a, of: "teams") == ["t1"])
        #expect(try Self.deletes(a, of: "notes") == ["n1"])
        for replica in [a, b] {
            #expect(
                try Self.rows(replica, "SELECT id, parent FROM people ORDER BY id") == [
                    [.text("p2"), .null], [.text("p3"), .null],
                ])
            #expect(try Self.rows(replica, "SELECT id, current FROM teams") == [[.text("t2"), .integer(1)]])
            #expect(try Self.rows(replica, "SELECT id, email FROM notes") == [[.text("n2"), .text("x@y")]])
        }
        // The touch trigger itself fires again on b as the merge writes the email (an app trigger
        // that writes a tracked table during a merge), so `notes.touched` is not compared.
    }

    /// A unique index on a generated column: the trigger compares the generated values, which a
    /// BEFORE trigger sees though the column is not tracked.
    @Test func aRowDisplacedThroughAGeneratedColumnIsDeleted() async throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: "CREATE TABLE users(id TEXT PRIMARY KEY, email TEXT, folded TEXT AS (lower(email)) UNIQUE);",
            preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO users(id, email) VALUES ('u1', 'X@Y')")
        _ = try group.round(prune: false)
        _ = try a.store.execute(sql: "INSERT OR REPLACE INTO users(id, email) VALUES ('u2', 'x@y')")
        _ = try group.round(prune: false)
        #expect(try Self.rows(b, "SELECT id, email FROM users") == [[.text("u2"), .text("x@y")]])
        #expect(try group.tableDifferences().isEmpty)
    }

    /// `execute` that makes a unique index and then writes through it in the same SQL: the
    /// triggers follow the index at once, and the next open reports no missing trigger.
    @Test func aUniqueIndexMadeThroughExecuteIsWatchedByTheNextStatement() async throws {
        let group = try ExchangeGroup(
            ["a", "b"], schema: "CREATE TABLE tags(id TEXT PRIMARY KEY, label TEXT);", preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO tags VALUES ('t1', 'red')")
        _ = try group.round(prune: false)
        _ = try b.store.execute(sql: "CREATE UNIQUE INDEX tags_by_label ON tags(label)")
        _ = try a.store.execute(
            sql: "CREATE UNIQUE INDEX tags_by_label ON tags(label); INSERT OR REPLACE INTO tags VALUES ('t2', 'red')")
        _ = try group.round(prune: false)
        #expect(try Self.rows(b, "SELECT id, label FROM tags") == [[.text("t2"), .text("red")]])
        #expect(try group.tableDifferences().isEmpty)
        let reopened = try Store.open(a.path)
        #expect(reopened.restoredCaptureTriggers.isEmpty, "no trigger was missing")
    }

    /// A column renamed by a migration is told from a drop and an add by the name SQLite writes
    /// into the insert trigger; the deletes of displaced rows that come first in that trigger
    /// name the key too, and were read as the first column: the rename was taken for other
    /// columns, and replicas that migrated wrote the column under a new identity.
    @Test func aRenameIsFollowedOnATableWithAUniqueIndex() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO users VALUES ('u1', 'x@y', 'one', 'h1')")
        _ = try group.round(prune: false)
        let rename = Store.Migration(sql: "ALTER TABLE users RENAME COLUMN name TO nick;")
        let summary = try a.store.migrate(rename)
        #expect(summary.renamedColumns == ["users": ["name": "nick"]])
        #expect(summary.version?.change == Schema.Change([.renameColumn(table: "users", column: "name", to: "nick")]))
        _ = try b.store.execute(sql: "UPDATE users SET name = 'from b' WHERE id = 'u1'")
        _ = try group.round(prune: false)
        try b.store.migrate(rename)
        _ = try group.round(prune: false)
        for replica in [a, b] {
            #expect(try Self.rows(replica, "SELECT id, nick FROM users") == [[.text("u1"), .text("from b")]])
        }
    }

    /// Two replicas that each wrote a row claiming the same value of a column declared `UNIQUE ON
    /// CONFLICT REPLACE`: the merge's write made SQLite delete the local row unrecorded, each
    /// replica kept the other's row and they never converged. The merge now overrides the clause,
    /// and the unique rule settles it as for any unique index.
    @Test func concurrentClaimsOfAReplacingUniqueValueAreSettledByTheMerge() async throws {
        // a's claim is the earlier one whatever the millisecond each write falls in: on equal
        // timestamps the replica ids would decide, and they are random.
        let group = try ExchangeGroup(
            ["a", "b"], schema: Self.schema, preserve: [],
            options: { Store.Options(clock: FixedWallClock(milliseconds: $0 == "a" ? 1_000_000 : 2_000_000)) })
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO users VALUES ('u1', NULL, 'first', 'h')")
        _ = try b.store.execute(sql: "INSERT INTO users VALUES ('u2', NULL, 'second', 'h')")
        _ = try group.round(prune: false)
        _ = try group.round(prune: false)
        let expected: [[SQLValue]] = [[.text("u1"), .text("first")]]
        #expect(try Self.rows(a, "SELECT id, name FROM users") == expected)
        #expect(try Self.rows(b, "SELECT id, name FROM users") == expected)
        #expect(try group.tableDifferences().isEmpty)
        #expect(try a.store.conflicts().map(\.kind) == ["unique"], "the later claim is listed, not lost silently")
    }

    @Test func aUniqueIndexMadeByAMigrationIsWatchedAndItsScratchTableGoesWithTracking() async throws {
        let group = try ExchangeGroup(
            ["a", "b"], schema: "CREATE TABLE tags(id TEXT PRIMARY KEY, label TEXT);", preserve: [])
        let (a, b) = (group["a"], group["b"])
        // Read by another connection: a write through the store would check its triggers first.
        func scratchTables() throws -> [String] {
            let other = try DatabaseQueue(path: a.path)
            defer { try? other.close() }
            return try other.read { db in
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'tidemark_displaced_%'")
            }
        }
        #expect(try scratchTables().isEmpty, "a table without a unique index has none")
        _ = try a.store.execute(sql: "INSERT INTO tags VALUES ('t1', 'red')")
        try a.store.migrate(Store.Migration(sql: "CREATE UNIQUE INDEX tags_by_label ON tags(label);"))
        try b.store.migrate(Store.Migration(sql: "CREATE UNIQUE INDEX tags_by_label ON tags(label);"))
        #expect(try scratchTables().count == 1)
        // Straight after the migration, from another client, before the store writes or imports.
        try Self.asAnotherClient(a, "INSERT OR REPLACE INTO tags VALUES ('t2', 'red')")
        _ = try group.round(prune: false)
        #expect(try Self.rows(b, "SELECT id, label FROM tags") == [[.text("t2"), .text("red")]])

        try a.store.migrate(Store.Migration(sql: "DROP INDEX tags_by_label;"))
        #expect(try scratchTables().isEmpty)
        try a.store.migrate(
            Store.Migration(sql: "CREATE UNIQUE INDEX tags_by_label ON tags(label);", untrack: ["tags"]))
        #expect(try scratchTables().isEmpty, "untracked, the table has no scratch table")
    }
}
