import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// The row digest (Protocol/exchange.md §8): kept up to date write by write, equal on replicas that
/// hold the same rows, carried in watermarks, and compared per member.
@Suite struct RowDigestTests {
    /// Two replicas that wrote, updated and deleted, then synced until both hold the same rows.
    static func convergedPair() throws -> ExchangeGroup {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        // Half the prices are integral reals, which SQLite keeps as integers on disk (REAL affinity).
        for i in 0..<20 {
            _ = try a.store.execute(
                sql: "INSERT INTO items(id, name, qty, price, photo, note) "
                    + "VALUES ('a\(i)', 'item \(i)', \(i), \(Double(i) / 2), x'0102', NULL)")
            _ = try b.store.execute(sql: "INSERT INTO tags(item, tag, weight) VALUES ('a\(i)', 'b', \(i))")
        }
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b0', 'from b')")
        try group.round()
        _ = try a.store.execute(sql: "UPDATE items SET name = 'renamed' WHERE id = 'a3'")
        _ = try b.store.execute(sql: "DELETE FROM items WHERE id = 'a4'")
        _ = try b.store.execute(sql: "UPDATE items SET qty = 99 WHERE id = 'a5'")
        try group.round()
        try group.round()
        return group
    }

    /// Updates an import merges into rows already there: the row's new hash is taken from the row
    /// SQLite writes (the pre-update hook) where it can, and read back where it cannot (a WITHOUT
    /// ROWID table on an SQLite that does not show its writes, a table with a trigger of the app's,
    /// which may change the row after). Either way the kept digest is what a count of the rows
    /// gives, for values of every storage class, integral reals in a REAL column, an empty blob, a
    /// text in an INTEGER column and a cell set back to its column's default.
    @Test func rowsUpdatedByAnImportAreHashedAsTheyAreStored() throws {
        let schema = """
            CREATE TABLE plain(id TEXT PRIMARY KEY, label TEXT, qty INTEGER, price REAL, data BLOB, tag TEXT DEFAULT 'none');
            CREATE TABLE keyed(id TEXT PRIMARY KEY, label TEXT, price REAL) WITHOUT ROWID;
            CREATE TABLE watched(id TEXT PRIMARY KEY, label TEXT, touched INTEGER DEFAULT 0);
            CREATE TRIGGER watched_touch AFTER UPDATE OF label ON watched BEGIN
              UPDATE watched SET touched = touched + 1 WHERE id = NEW.id;
            END;
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        for i in 0..<6 {
            _ = try a.store.execute(
                sql: """
                    INSERT INTO plain VALUES ('p\(i)', 'p', \(i), \(i).5, x'00ff', 'x');
                    INSERT INTO keyed VALUES ('k\(i)', 'k', 2.5);
                    INSERT INTO watched(id, label) VALUES ('w\(i)', 'w');
                    """)
        }
        try group.round()
        let updates = [
            "UPDATE plain SET label = 'a longer label than before', price = 3 WHERE id = 'p0'",
            "UPDATE plain SET qty = 9.0, data = zeroblob(0) WHERE id = 'p1'",
            "UPDATE plain SET tag = 'none', label = NULL WHERE id = 'p2'",
            "UPDATE plain SET price = -0.0, qty = 'text in an integer column' WHERE id = 'p3'",
            "UPDATE plain SET price = 4, label = 'é' WHERE id = 'p4'",
            "UPDATE keyed SET price = 5, label = NULL WHERE id = 'k1'",
            "UPDATE watched SET label = 'again' WHERE id = 'w1'",
        ]
        for update in updates { _ = try b.store.execute(sql: update) }
        try group.round()
        #expect(try group.tableDifferences() == [])
        for replica in [a, b] {
            #expect(try replica.store.rowDigest().digest == replica.tables().rowDigest, "\(replica.name)")
        }
    }

    @Test func convergedReplicasHaveEqualDigestsAndSaySoOfEachOther() throws {
        let group = try Self.convergedPair()
        let (a, b) = (group["a"], group["b"])
        #expect(try group.tableDifferences() == [])
        let (digestA, tokenA) = try a.store.rowDigest()
        let (digestB, tokenB) = try b.store.rowDigest()
        #expect(tokenA == tokenB)
        #expect(digestA == digestB)
        // Kept write by write, it is what the rows give when counted from scratch.
        #expect(digestA == (try a.tables().rowDigest))
        #expect(digestA["items"].rows == 20)
        #expect(try group.member("b", seenBy: "a")?.rows == .same)
        #expect(try group.member("a", seenBy: "b")?.rows == .same)
    }

    @Test func aRowChangedBehindTrackingIsReportedNamingItsTable() throws {
        let group = try Self.convergedPair()
        let (a, b) = (group["a"], group["b"])
        // Another client removes b's capture triggers on items, writes, and puts them back.
        try Self.writeBehindTracking(b.path, table: "items", sql: "UPDATE items SET name = 'astray' WHERE id = 'a7'")
        let kept = try b.store.rowDigest().digest
        #expect(kept == (try b.tables().rowDigest), "the schema change made b count its rows again")
        #expect(kept.differingTables(from: try a.store.rowDigest().digest) == ["items"])
        // b's next pull writes a watermark with its digest; a reads it on the pull after.
        try group.round()
        try group.round()
        #expect(try group.member("b", seenBy: "a")?.rows == .differ(tables: ["items"]))
        #expect(try group.member("a", seenBy: "b")?.rows == .differ(tables: ["items"]))
    }

    /// A migration that renames a column changes every row's hash (names are hashed) but writes
    /// no transaction: a peer at the same token that has not made it yet was reported as holding
    /// other rows. A watermark now lists the tables as its writer's current version names them,
    /// and digests of different versions are not compared.
    @Test func aPeerOnAnotherSchemaVersionIsNotComparedUntilItMigrates() throws {
        let group = try Self.convergedPair()
        let (a, b) = (group["a"], group["b"])
        let rename = Store.Migration(sql: "ALTER TABLE items RENAME COLUMN note TO remark;")
        try a.store.migrate(rename)
        try group.round()
        try group.round()
        #expect(try a.store.currentToken() == b.store.currentToken())
        #expect(try group.member("b", seenBy: "a")?.rows == .otherSchema)
        #expect(try group.member("a", seenBy: "b")?.rows == .otherSchema)
        try b.store.migrate(rename)
        try group.round()
        try group.round()
        #expect(try group.member("b", seenBy: "a")?.rows == .same)
        #expect(try group.member("a", seenBy: "b")?.rows == .same)
    }

    @Test func aForeignKeyActionDuringAnImportIsCounted() throws {
        let schema = """
            CREATE TABLE lists(id TEXT PRIMARY KEY, title TEXT);
            CREATE TABLE entries(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id) ON DELETE CASCADE, body TEXT);
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO lists VALUES ('l', 'groceries')")
        try group.round()
        // b adds an entry a never sees before a's delete of the list reaches b and cascades.
        _ = try b.store.execute(sql: "INSERT INTO entries VALUES ('e', 'l', 'milk')")
        _ = try a.store.execute(sql: "DELETE FROM lists WHERE id = 'l'")
        try group.push("a")
        try group.pull("b", prune: false)
        #expect(try b.store.rowDigest().digest == (try b.tables().rowDigest))
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        for replica in group.replicas {
            #expect(try replica.store.rowDigest().digest == (try replica.tables().rowDigest), "\(replica.name)")
        }
    }

    /// A parent's delete that cascades through an untracked table into a tracked one: the tracked
    /// table's digest is counted again, as when the action reaches it directly.
    @Test func aForeignKeyActionThroughAnUntrackedTableIsCounted() throws {
        let group = try ForeignKeysTests.untrackedChain(action: "ON DELETE CASCADE")
        try group.round()
        #expect(try group["b"].tables()["t"]?.rows == [], "the delete cascaded through b's own row of u")
        for replica in group.replicas {
            #expect(try replica.store.rowDigest().digest == (try replica.tables().rowDigest), "\(replica.name)")
        }
    }

    /// A system delete of an orphan cascades into its own children behind the merge: their
    /// digest is counted again, though the import wrote none of their table's rows nor its
    /// parent's.
    @Test func aSystemDeleteThatCascadesIsCounted() throws {
        let schema = """
            CREATE TABLE lists(id TEXT PRIMARY KEY, title TEXT);
            CREATE TABLE entries(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id), body TEXT);
            CREATE TABLE notes(id TEXT PRIMARY KEY, entry TEXT REFERENCES entries(id) ON DELETE CASCADE, text TEXT);
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO lists VALUES ('l', 'groceries')")
        try group.round()
        _ = try b.store.execute(
            sql: "INSERT INTO entries VALUES ('e', 'l', 'milk'); INSERT INTO notes VALUES ('n', 'e', 'oat')")
        _ = try a.store.execute(sql: "DELETE FROM lists WHERE id = 'l'")
        try group.push("a")
        try group.pull("b", prune: false)
        #expect(try b.tables()["notes"]?.rows == [], "the orphan's delete cascaded")
        #expect(try b.store.rowDigest().digest == (try b.tables().rowDigest))
    }

    @Test func aStoreFromBeforeDigestsCountsItsRowsOnce() throws {
        let group = try Self.convergedPair()
        let a = group["a"]
        let expected = try a.tables().rowDigest
        // As an earlier build left it: no digests, no row hashes.
        let queue = try DatabaseQueue(path: a.path)
        try queue.write { db in
            try db.execute(sql: "DROP TABLE tidemark_digests")
            for table in try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE name LIKE 'tidemark_rows_%'")
            {
                try db.execute(sql: "ALTER TABLE \(table.quotedDatabaseIdentifier) DROP COLUMN h")
            }
        }
        try queue.close()
        let reopened = try TestReplica(opening: a.path)
        #expect(try reopened.store.rowDigest().digest == expected)
        _ = try reopened.store.execute(sql: "UPDATE items SET qty = 7 WHERE id = 'a1'")
        #expect(try reopened.store.rowDigest().digest == (try reopened.tables().rowDigest))
    }

    /// A migration counts again only the tables whose row hashes it may change; every other table
    /// keeps its digest, which stays what a count from scratch gives.
    /// Schema changes through `execute` leave the tracked tables and Tidemark's triggers as they
    /// were at every statement (it refuses the others), so the kept digests still hold after them
    /// and the next watermark counts nothing again; another client's schema change is not vouched
    /// for.
    @Test func schemaChangesThroughExecKeepTheKeptDigests() throws {
        let group = try Self.convergedPair()
        let a = group["a"]
        try group.pull("a", prune: false)
        /// Whether `a` vouches for its kept digests: they were noted at the current schema cookie.
        func trusted() throws -> Bool {
            let queue = try DatabaseQueue(path: a.path)
            defer { try? queue.close() }
            return try queue.read { db in
                try Int64.fetchOne(db, sql: "SELECT value FROM tidemark_meta WHERE key = 'digest_schema_version'")
                    == Int64.fetchOne(db, sql: "PRAGMA schema_version")
            }
        }
        #expect(try trusted())
        _ = try a.store.execute(
            sql: """
                CREATE INDEX items_by_note ON items(note); CREATE TABLE scratch(x);
                UPDATE items SET note = 'indexed' WHERE id = 'a1'; ALTER TABLE scratch ADD COLUMN y
                """)
        #expect(try trusted())
        #expect(try a.store.rowDigest().digest == (try a.tables().rowDigest))
        let other = try DatabaseQueue(path: a.path)
        try other.write { db in try db.execute(sql: "CREATE TABLE other(x)") }
        try other.close()
        #expect(try !trusted())
        #expect(try a.store.rowDigest().digest == (try a.tables().rowDigest))
    }

    @Test func aMigrationCountsAgainOnlyTheTablesWhoseRowHashesItMayChange() throws {
        let group = try Self.convergedPair()
        let a = group["a"]
        /// The tables whose digest `a` keeps, by name.
        func kept() throws -> Set<String> {
            let queue = try DatabaseQueue(path: a.path)
            defer { try? queue.close() }
            return Set(
                try queue.read { db in
                    try String.fetchAll(
                        db,
                        sql:
                            "SELECT t.name FROM tidemark_digests AS d JOIN tidemark_tables AS t ON t.id = d.table_id")
                })
        }
        /// Runs a migration, then checks which user tables still have a kept digest, and that the
        /// digest `a` gives is the one its rows give.
        func migrate(
            _ sql: String, keeps expected: Set<String>, tables: Set<String> = ["items", "tags"], _ comment: Comment
        ) throws {
            try a.store.migrate(Store.Migration(sql: sql))
            #expect(try kept().intersection(tables) == expected, comment)
            #expect(try a.store.rowDigest().digest == (try a.tables().rowDigest), comment)
            // The next watermark counts what was forgotten, and keeps it.
            try group.pull("a", prune: false)
            #expect(try kept().isSuperset(of: tables), comment)
        }
        _ = try a.store.execute(sql: "UPDATE items SET note = 'pending' WHERE id = 'a2'")
        try group.pull("a", prune: false)
        #expect(try kept().isSuperset(of: ["items", "tags"]))
        try migrate(
            "CREATE INDEX items_by_qty ON items(qty); ALTER TABLE items ADD COLUMN color TEXT",
            keeps: ["items", "tags"], "an index and a nullable column change no row's hash")
        _ = try a.store.execute(sql: "UPDATE items SET color = 'red' WHERE id = 'a1'")
        try migrate(
            "ALTER TABLE tags ADD COLUMN shade TEXT DEFAULT 'blue'", keeps: ["items", "tags"],
            "every row of tags now holds the default, which is the column's hash default")
        try migrate(
            "ALTER TABLE tags ADD COLUMN ratio REAL DEFAULT 1", keeps: ["items", "tags"],
            "a REAL column's integer default is kept as the real 1.0: still a hash default")
        try migrate(
            "ALTER TABLE tags ADD COLUMN code TEXT DEFAULT 7", keeps: ["items"],
            "a TEXT column keeps the integer 7 as the text '7': no hash default, every row's hash changed")
        try migrate(
            "ALTER TABLE tags ADD COLUMN level INTEGER DEFAULT '2'", keeps: ["items"],
            "an INTEGER column keeps the text '2' as the integer 2: no hash default")
        try migrate(
            "ALTER TABLE tags ADD COLUMN loose DEFAULT 1.0", keeps: ["items"],
            "rows that predate a column of BLOB affinity read its default 1.0 as the integer 1")
        try migrate(
            "ALTER TABLE tags ADD COLUMN mask INTEGER DEFAULT 0x80000000", keeps: ["items"],
            "rows that predate the column read a large hexadecimal default as text")
        // A default SQLite cannot evaluate for a row (0x10000000000000000) is refused
        // (`MigrationTests.aDefaultThatDiffersPerReplicaIsRefused`): a replica on the new version
        // could insert no row of an older one.
        try migrate(
            "ALTER TABLE tags ADD COLUMN fraction DEFAULT 0.5", keeps: ["items", "tags"],
            "a real that is not integral is kept as it is in a column of BLOB affinity")
        try migrate("ALTER TABLE tags ADD COLUMN size INTEGER DEFAULT NULL", keeps: ["items", "tags"], "DEFAULT NULL")
        try migrate(
            "CREATE INDEX tags_by_tag ON tags(tag); UPDATE items SET qty = qty + 1 WHERE id = 'a6'",
            keeps: ["tags"], "the SQL wrote a row of items")
        try migrate(
            "ALTER TABLE items ADD COLUMN size INTEGER; UPDATE items SET size = 1 WHERE id = 'a1'", keeps: ["tags"],
            "a write to a column the triggers do not know yet is not captured")
        try migrate("ALTER TABLE items RENAME COLUMN note TO remark", keeps: ["tags"], "column names are hashed")
        try migrate("ALTER TABLE tags DROP COLUMN weight", keeps: ["items"], "a dropped column leaves the hashes")
        try migrate(
            "ALTER TABLE items RENAME TO goods", keeps: ["tags"], tables: ["goods", "tags"], "table names are hashed")
    }

    /// A cell that holds its column's hash default is left out of the row hash (exchange.md §8.1),
    /// whether the row gained it by the migration that added the column, or was written with it on
    /// this replica or another: adding the column changes no digest, and replicas that hold the
    /// same rows agree however each row came by its value.
    @Test func aCellHoldingItsColumnsDefaultIsLeftOutOfTheRowHash() throws {
        let group = try Self.convergedPair()
        let (a, b) = (group["a"], group["b"])
        let before = try a.store.rowDigest().digest
        let migration = Store.Migration(sql: "ALTER TABLE items ADD COLUMN shade TEXT NOT NULL DEFAULT 'blue'")
        try a.store.migrate(migration)
        #expect(try a.store.rowDigest().digest == before, "no row's hash changed")
        #expect(before == (try a.tables().rowDigest))
        try b.store.migrate(migration)
        _ = try a.store.execute(
            sql: "INSERT INTO items(id, name, shade) VALUES ('c0', 'explicit', 'blue'), ('c1', 'red', 'red')")
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c2', 'implicit')")
        _ = try b.store.execute(sql: "UPDATE items SET shade = 'red' WHERE id IN ('a1', 'a2')")
        try group.round()
        _ = try b.store.execute(sql: "UPDATE items SET shade = 'blue' WHERE id = 'a1'")
        _ = try a.store.execute(sql: "UPDATE items SET shade = 'blue' WHERE id = 'c1'")
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        let digest = try a.store.rowDigest().digest
        #expect(digest == (try b.store.rowDigest().digest))
        #expect(digest == (try a.tables().rowDigest))
        #expect(try group.member("b", seenBy: "a")?.rows == .same)
        #expect(digest["items"].rows == before["items"].rows + 3)
    }

    /// A store whose digests an earlier build kept, when a cell holding its column's default was
    /// still hashed, counts them again once when it is opened.
    @Test func digestsOfAnEarlierRowHashAreCountedAgain() throws {
        let group = try Self.convergedPair()
        let a = group["a"]
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN shade TEXT DEFAULT 'blue'"))
        let expected = try a.tables().rowDigest
        let queue = try DatabaseQueue(path: a.path)
        try queue.write { db in
            try db.execute(sql: "DELETE FROM tidemark_meta WHERE key = 'row_hash_rule'")
            try db.execute(sql: "UPDATE tidemark_digests SET sum = sum + 1")
        }
        try queue.close()
        let reopened = try TestReplica(opening: a.path)
        #expect(try reopened.store.rowDigest().digest == expected)
    }

    /// A column another client added, and wrote, while this store was open: its next watermark
    /// counts the rows by the registered columns, and the migration that adopts the column when
    /// the store is opened again counts them again.
    @Test func aColumnAnotherClientAddedAndWroteIsCountedOnceAdopted() throws {
        let group = try Self.convergedPair()
        let a = group["a"]
        let queue = try DatabaseQueue(path: a.path)
        try queue.write { db in
            try db.execute(sql: "ALTER TABLE items ADD COLUMN color TEXT")
            try db.execute(sql: "UPDATE items SET color = 'red' WHERE id = 'a1'")
        }
        try queue.close()
        try group.pull("a", prune: false)
        let reopened = try TestReplica(opening: a.path)
        #expect(reopened.store.adoptedSchemaChange?.addedColumns == ["items": ["color"]])
        #expect(try reopened.store.rowDigest().digest == (try reopened.tables().rowDigest))
    }

    /// Writes `sql` from a connection of its own with `table`'s capture triggers removed, then puts
    /// them back exactly as they were, as a client working behind Tidemark's back would.
    static func writeBehindTracking(_ path: String, table: String, sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            let triggers = try Row.fetchAll(
                db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                arguments: [table])
            for trigger in triggers {
                try db.execute(sql: "DROP TRIGGER \((trigger[0] as String).quotedDatabaseIdentifier)")
            }
            try db.execute(sql: sql)
            for trigger in triggers { try db.execute(sql: trigger[1] as String) }
        }
        try queue.close()
    }
}
