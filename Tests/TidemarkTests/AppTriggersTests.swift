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
}
