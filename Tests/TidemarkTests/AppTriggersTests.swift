import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// An app's own triggers on tracked tables. One made after tracking began, by a migration or by
/// another client, fires after the capture triggers, as one made before tracking does
/// (`CaptureTriggers.outranked`): the writes it nests are recorded after the write that fired it,
/// and peers that apply them in that order end with the same rows. They run when a peer merges
/// the write, and what they write then is counted (`AppTriggers`).
@Suite struct AppTriggersTests {
    static let schema = """
        CREATE TABLE u(id TEXT PRIMARY KEY, email TEXT UNIQUE ON CONFLICT REPLACE, n TEXT, updated INT DEFAULT 0);
        """
    /// A counter of edits, and a column kept normalized: each writes the row that fired it.
    static let triggers = """
        CREATE TRIGGER touch AFTER UPDATE OF email, n ON u BEGIN UPDATE u SET updated = updated + 1 WHERE id = NEW.id; END;
        CREATE TRIGGER lowered AFTER UPDATE OF n ON u BEGIN UPDATE u SET n = lower(NEW.n) WHERE id = NEW.id; END;
        """

    static func rows(_ replica: TestReplica) throws -> [[SQLValue]] {
        try replica.store.execute(sql: "SELECT * FROM u ORDER BY id").0[0].rows
    }

    /// Whether every capture trigger on `u` is newer than every app trigger on it.
    static func captureIsNewest(_ replica: TestReplica) throws -> Bool {
        let queue = try DatabaseQueue(path: replica.path)
        defer { try? queue.close() }
        return try queue.read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT (SELECT max(rowid) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'u' AND name NOT LIKE 'tidemark%')
                      < (SELECT min(rowid) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'u' AND name LIKE 'tidemark%')
                    """) ?? true
        }
    }

    @Test func triggersAMigrationMakesFireAfterCapture() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        for replica in [a, b] { try replica.store.migrate(Store.Migration(sql: Self.triggers)) }
        #expect(try Self.captureIsNewest(a))
        _ = try a.store.execute(sql: "INSERT INTO u(id, email, n) VALUES ('1', 'e1', 'x'), ('2', 'e2', 'y')")
        _ = try group.round(prune: false)

        _ = try a.store.execute(sql: "UPDATE u SET n = 'Zed' WHERE id = '2'")
        // A plain UPDATE into a column declared ON CONFLICT REPLACE displaces row 1.
        _ = try a.store.execute(sql: "UPDATE u SET email = 'e1' WHERE id = '2'")
        _ = try group.round(prune: false)
        _ = try group.round(prune: false)
        let expected: [[SQLValue]] = [[.text("2"), .text("e1"), .text("zed"), .integer(3)]]
        #expect(try Self.rows(a) == expected)
        #expect(try Self.rows(b) == expected)
    }

    /// A trigger on every update of its table (no column list) that writes the row that fired it:
    /// where the write was made, SQLite does not fire it again for its own write; a merge that
    /// wrote the value the row already holds fired it again (the counter counted twice, and the
    /// replicas stayed apart). A stamp guarded by `WHEN NEW.stamp IS OLD.stamp` takes the writer's.
    @Test func aTriggerOnEveryUpdateThatWritesItsRowCountsOnceOnEveryReplica() throws {
        let schema = """
            CREATE TABLE note(id TEXT PRIMARY KEY, title TEXT, n INTEGER NOT NULL DEFAULT 0);
            CREATE TRIGGER counted AFTER UPDATE ON note BEGIN UPDATE note SET n = n + 1 WHERE id = NEW.id; END;
            CREATE TABLE doc(id TEXT PRIMARY KEY, title TEXT, stamp TEXT);
            CREATE TRIGGER stamped AFTER UPDATE ON doc WHEN NEW.stamp IS OLD.stamp
            BEGIN UPDATE doc SET stamp = strftime('%Y-%m-%d %H:%M:%f', 'now') || random() WHERE id = NEW.id; END;
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO note(id, title) VALUES ('1', 'x'); INSERT INTO doc(id) VALUES ('1')")
        _ = try group.round(prune: false)
        _ = try a.store.execute(sql: "UPDATE note SET title = 'y'; UPDATE doc SET title = 'y'")
        _ = try b.store.execute(sql: "INSERT INTO note(id, title) VALUES ('2', 'z')")
        _ = try group.round(prune: false)
        _ = try group.round(prune: false)
        let notes = try b.store.execute(sql: "SELECT id, title, n FROM note ORDER BY id").0[0].rows
        #expect(notes == [[.text("1"), .text("y"), .integer(1)], [.text("2"), .text("z"), .integer(0)]])
        #expect(try group.tableDifferences() == [])
    }

    /// `execute` runs SQL that makes a trigger on a tracked table and then writes through it: the
    /// capture triggers are made newest again before the write, in the same call.
    @Test func aTriggerMadeThroughExecuteFiresAfterCaptureForTheStatementsAfterIt() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO u(id, email, n) VALUES ('1', 'e1', 'x')")
        _ = try group.round(prune: false)
        for (i, replica) in [a, b].enumerated() {
            _ = try replica.store.execute(
                sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY); " + Self.triggers
                    + (i == 0 ? "UPDATE u SET n = 'Why' WHERE id = '1';" : ""))
            #expect(try Self.captureIsNewest(replica))
        }
        _ = try group.round(prune: false)
        _ = try group.round(prune: false)
        let expected: [[SQLValue]] = [[.text("1"), .text("e1"), .text("why"), .integer(2)]]
        #expect(try Self.rows(a) == expected)
        #expect(try Self.rows(b) == expected)
    }

    @Test func aTriggerAnotherClientMakesIsOutrankedBeforeTheStoresNextWrite() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO u(id, email, n) VALUES ('1', 'e1', 'x')")
        _ = try group.round(prune: false)
        for replica in [a, b] {
            let other = try DatabaseQueue(path: replica.path)
            try other.write { db in try db.execute(sql: Self.triggers) }
            try other.close()
        }
        #expect(try !Self.captureIsNewest(a))

        _ = try a.store.execute(sql: "UPDATE u SET n = 'Why' WHERE id = '1'")
        #expect(try Self.captureIsNewest(a))
        #expect(a.store.restoredCaptureTriggers.isEmpty, "no write went unrecorded")
        _ = try group.round(prune: false)
        _ = try group.round(prune: false)
        let expected: [[SQLValue]] = [[.text("1"), .text("e1"), .text("why"), .integer(2)]]
        #expect(try Self.rows(a) == expected)
        #expect(try Self.rows(b) == expected)
    }

    /// An app's trigger that writes another tracked table (an audit row with a new key) runs again
    /// as a peer merges the write that fired it, and what it writes then is not captured: the
    /// replicas hold different rows, and their row digests say so instead of "same rows".
    @Test func rowsAnAppTriggerWritesDuringAMergeAreCounted() throws {
        let schema = """
            CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT);
            CREATE TABLE audit(id TEXT PRIMARY KEY, item TEXT, what TEXT);
            CREATE TRIGGER audit_items AFTER UPDATE OF name ON items BEGIN
              INSERT INTO audit VALUES (lower(hex(randomblob(8))), NEW.id, NEW.name);
            END;
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items VALUES ('1', 'x')")
        _ = try group.round(prune: false)
        #expect(try a.store.rowDigest().digest == b.store.rowDigest().digest)

        _ = try a.store.execute(sql: "UPDATE items SET name = 'y' WHERE id = '1'")
        _ = try group.round(prune: false)
        _ = try group.round(prune: false)
        #expect(try a.store.execute(sql: "SELECT count(*) FROM audit").0[0].rows == [[.integer(1)]])
        #expect(try b.store.execute(sql: "SELECT count(*) FROM audit").0[0].rows == [[.integer(2)]])
        #expect(try b.store.rowDigest().digest.tables.first { $0.name == "audit" }?.rows == 2)
        #expect(try a.store.rowDigest().digest != b.store.rowDigest().digest)
    }

    /// Triggers of one replica's app that change rows during a merge by other paths: other rows of
    /// their own table, a write through a view's `INSTEAD OF` trigger, a delete that sets off a
    /// foreign key's action. The digest kept after the merge is the one a count of the rows gives.
    static let reachedCases: [(schema: String, setup: String, trigger: String)] = [
        (
            "CREATE TABLE t(id TEXT PRIMARY KEY, v TEXT);",
            "INSERT INTO t VALUES ('counter', '0')",
            "CREATE TRIGGER bump AFTER INSERT ON t WHEN NEW.id <> 'counter' BEGIN UPDATE t SET v = v + 1 WHERE id = 'counter'; END;"
        ),
        (
            "CREATE TABLE t(id TEXT PRIMARY KEY, v TEXT); CREATE TABLE c(id TEXT PRIMARY KEY, n INTEGER);",
            "INSERT INTO c VALUES ('counter', 0)",
            """
            CREATE VIEW bumper AS SELECT id FROM c;
            CREATE TRIGGER bumper_ins INSTEAD OF INSERT ON bumper BEGIN UPDATE c SET n = n + 1 WHERE id = NEW.id; END;
            CREATE TRIGGER bump AFTER INSERT ON t BEGIN INSERT INTO bumper(id) VALUES ('counter'); END;
            """
        ),
        (
            """
            CREATE TABLE t(id TEXT PRIMARY KEY, v TEXT); CREATE TABLE p(id TEXT PRIMARY KEY);
            CREATE TABLE k(id TEXT PRIMARY KEY, pid TEXT REFERENCES p(id) ON DELETE SET NULL);
            """,
            "INSERT INTO p VALUES ('p1'); INSERT INTO k VALUES ('k1', 'p1')",
            "CREATE TRIGGER zap AFTER INSERT ON t BEGIN DELETE FROM p WHERE id = 'p1'; INSERT INTO p VALUES ('p1'); END;"
        ),
    ]

    @Test(arguments: 0..<reachedCases.count)
    func rowsAnAppTriggerChangesByAnyPathDuringAMergeAreCounted(_ index: Int) throws {
        let (schema, setup, trigger) = Self.reachedCases[index]
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: setup)
        _ = try group.round(prune: false)
        let other = try DatabaseQueue(path: b.path)
        try other.write { db in try db.execute(sql: trigger) }
        // The next open makes the capture triggers the newest again (a schema change of its own,
        // after which the digests are counted again): the merge below is what is looked at.
        #expect(try Store.open(b.path).restoredCaptureTriggers.isEmpty)
        _ = try group.round(prune: false)
        #expect(try a.store.rowDigest().digest == b.store.rowDigest().digest)

        _ = try a.store.execute(sql: "INSERT INTO t VALUES ('y', '1')")
        _ = try group.round(prune: false)
        _ = try group.round(prune: false)
        let kept = try b.store.rowDigest().digest
        try other.write { db in try db.execute(sql: "DELETE FROM tidemark_digests") }
        try other.close()
        #expect(kept == (try b.store.rowDigest().digest), "the kept digest is what a count finds")
        #expect(kept != (try a.store.rowDigest().digest))
    }
}
