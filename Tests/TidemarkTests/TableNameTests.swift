import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// Table and column names as SQLite takes them: with a double quote in them, and in any ASCII case.
@Suite struct TableNameTests {
    static let schema = #"CREATE TABLE "my ""table"""(id TEXT PRIMARY KEY, "co""l" TEXT, n INTEGER);"#
    static let table = #""my ""table""""#

    static func rows(of replica: TestReplica, columns: String = #"id, "co""l", n"#) throws -> [[String]] {
        try DatabaseQueue(path: replica.path).read { db in
            try Row.fetchAll(db, sql: "SELECT \(columns) FROM \(table) ORDER BY id").map { row in
                row.databaseValues.map { $0.isNull ? "NULL" : String.fromDatabaseValue($0) ?? "\($0)" }
            }
        }
    }

    @Test func aTableAndColumnsWithDoubleQuotesInTheirNamesReplicateAndMigrate() throws {
        let directory = try TemporaryDirectory("tidemark-quoted")
        let a = try TestReplica("a", in: directory, schema: Self.schema, preserve: [#"my "table".co"l"#])
        let b = try TestReplica("b", in: directory, schema: Self.schema, preserve: [#"my "table".co"l"#])
        try TestReplica.trustEachOther([a, b])
        _ = try a.store.write { db in
            try db.execute(sql: #"INSERT INTO "my ""table"""(id, "co""l", n) VALUES ('1', 'x', 1), ('2', 'y', 2)"#)
            try db.execute(sql: #"UPDATE "my ""table""" SET "co""l" = 'z' WHERE id = '1'"#)
        }
        _ = try b.store.write { db in
            try db.execute(sql: #"INSERT INTO "my ""table"""(id, "co""l", n) VALUES ('3', 'w', 3)"#)
        }
        let migration = Store.Migration(sql: #"ALTER TABLE "my ""table""" ADD COLUMN "ne""w" TEXT;"#)
        for replica in [a, b] { try replica.store.migrate(migration) }
        _ = try a.store.write { db in
            try db.execute(sql: #"UPDATE "my ""table""" SET "ne""w" = 'q' WHERE id = '2'"#)
            try db.execute(sql: #"DELETE FROM "my ""table""" WHERE id = '1'"#)
        }

        try a.export(to: directory.file("a.tmb"))
        try b.export(to: directory.file("b.tmb"))
        _ = try b.store.importBundle(at: directory.file("a.tmb"))
        _ = try a.store.importBundle(at: directory.file("b.tmb"))

        let expected = [["2", "y", "2", "q"], ["3", "w", "3", "NULL"]]
        let columns = #"id, "co""l", n, "ne""w""#
        let (rowsOfA, rowsOfB) = (try Self.rows(of: a, columns: columns), try Self.rows(of: b, columns: columns))
        #expect(rowsOfA == expected, "\(rowsOfA)")
        #expect(rowsOfB == expected, "\(rowsOfB)")
        let deleted = try b.store.fetchHistory().flatMap(\.changes).filter { $0.type == .delete }
        #expect(deleted.map(\.table) == [#"my "table""#])
        #expect(deleted.first?.tombstone?.contains(History.Column(#"co"l"#, .text("z"))) == true)
    }

    /// SQLite matches names whatever their ASCII case. Tracking `T` for table `t` registers `t`,
    /// as the schema spells it, so that it exchanges with a replica that tracks `t`; a preserve, a
    /// migration and a history filter that say `T` mean `t` too.
    @Test func aTableNamedInAnotherCaseIsRegisteredAsTheSchemaSpellsIt() throws {
        let directory = try TemporaryDirectory("tidemark-names")
        let schema = "CREATE TABLE t(id TEXT PRIMARY KEY, b TEXT); CREATE TABLE u(id TEXT PRIMARY KEY, c TEXT);"
        let a = try TestReplica("a", in: directory, schema: schema, preserve: [])
        let b = try Store.initialize(
            directory.file("b.db"),
            setup: Store.Setup(replicaName: "b", schema: ("b.sql", schema), tables: ["T", "t"], preserve: ["T.b"])
        ).store
        #expect(b.trackedTables.map(\.name) == ["t"])
        #expect(b.trackedTables.first?.preservedColumns == ["b"])
        _ = try b.write { db in try db.execute(sql: "INSERT INTO T VALUES ('from-b', 'x')") }
        _ = try a.store.write { db in try db.execute(sql: "INSERT INTO t VALUES ('from-a', 'y')") }
        try a.trust(TestReplica(opening: directory.file("b.db")))
        try b.addPeer(name: "a", publicKeyBase64: a.publicKeyBase64)
        _ = try b.exportBundle(since: .zero, to: directory.file("b.tmb"), key: KeyFile.load(directory.file("b.db.key")))
        let imported = try a.store.importBundle(at: directory.file("b.tmb"))
        #expect(imported.appliedChanges == 1)
        #expect(try b.fetchHistory(HistoryRequest(tables: ["T"])).count == 1)

        let summary = try b.migrate(Store.Migration(track: ["U"], untrack: ["T"], preserve: ["U.c"]))
        #expect(summary.trackedTables == ["u"])
        #expect(summary.untrackedTables == ["t"])
        #expect(b.trackedTables.map(\.name) == ["u"])
        #expect(b.trackedTables.first?.preservedColumns == ["c"])
    }

    /// Names a bundle cannot carry, or that Tidemark would take for another (one text in two
    /// Unicode normal forms, which SQLite keeps apart), are refused where a table starts being
    /// tracked and where a migration would give them to a tracked table: the store is left as it was.
    @Test(arguments: [
        #"CREATE TABLE t(id TEXT PRIMARY KEY, "" TEXT);"#,
        "CREATE TABLE t(id TEXT PRIMARY KEY, \"\(String(repeating: "c", count: 4097))\" TEXT);",
        "CREATE TABLE t(id TEXT PRIMARY KEY, \"caf\u{E9}\" TEXT, \"cafe\u{301}\" TEXT);",
        "CREATE TABLE \"caf\u{E9}\"(id TEXT PRIMARY KEY); CREATE TABLE \"cafe\u{301}\"(id TEXT PRIMARY KEY);",
    ])
    func aNameABundleCannotCarryIsRefusedAtInit(_ schema: String) throws {
        let directory = try TemporaryDirectory("tidemark-names")
        #expect {
            _ = try TestReplica("a", in: directory, schema: schema, preserve: [])
        } throws: { error in
            guard case StoreError.untrackableTable(_, let reason, _) = error else { return false }
            return reason.contains("name")
        }
    }

    @Test(arguments: [
        #"ALTER TABLE t ADD COLUMN "" TEXT;"#,
        "ALTER TABLE t ADD COLUMN \"\(String(repeating: "c", count: 4097))\" TEXT;",
        "ALTER TABLE t ADD COLUMN \"cafe\u{301}\" TEXT;",
        "ALTER TABLE t RENAME COLUMN v TO \"\";",
    ])
    func aNameABundleCannotCarryIsRefusedByAMigration(_ sql: String) throws {
        let directory = try TemporaryDirectory("tidemark-names")
        let a = try TestReplica(
            "a", in: directory, schema: "CREATE TABLE t(id TEXT PRIMARY KEY, v TEXT, \"caf\u{E9}\" TEXT);",
            preserve: [])
        _ = try a.store.execute(sql: "INSERT INTO t VALUES ('1', 'x', 'y')")
        let before = try StoreSnapshot.everything(of: a.path)
        #expect(throws: StoreError.self) { try a.store.migrate(Store.Migration(sql: sql)) }
        #expect(try StoreSnapshot.everything(of: a.path) == before)
        // The store stays usable by everything else.
        _ = try a.store.execute(sql: "UPDATE t SET v = 'z'")
        #expect(try a.store.fetchHistory().count == 2)
    }

    /// A refused name of thousands of bytes is shown cut, with its length, at init and in a migration.
    @Test func aLongNameIsShownCutInTheRefusal() throws {
        let directory = try TemporaryDirectory("tidemark-names")
        let long = String(repeating: "c", count: 5000)
        #expect {
            _ = try TestReplica(
                "a", in: directory, schema: "CREATE TABLE t(id TEXT PRIMARY KEY, \"\(long)\" TEXT);", preserve: [])
        } throws: { error in
            "\(error)".count < 300 && "\(error)".contains("… (5000 bytes)")
        }
        let b = try TestReplica(
            "b", in: directory, schema: "CREATE TABLE t(id TEXT PRIMARY KEY, v TEXT);", preserve: [])
        for error in [
            StoreError.unknownTable(long), .unknownColumn(table: "t", column: long), .invalidReplicaName(long),
        ] {
            #expect("\(error)".count < 300 && "\(error)".contains("… (5000 bytes)"), "\(error)")
        }
        #expect {
            try b.store.migrate(Store.Migration(sql: "ALTER TABLE t ADD COLUMN \"\(long)\" TEXT;"))
        } throws: { error in
            "\(error)".count < 300 && "\(error)".contains("… (5000 bytes)")
        }
    }

    /// A key column that keeps the storage class of equal numbers (no declared type, BLOB) holds
    /// 1 and 1.0 as one row to SQLite and two to replicas: a real key equal to an integer is
    /// refused, as written and as found where the table starts being tracked.
    @Test func aRealKeyEqualToAnIntegerIsRefused() throws {
        let directory = try TemporaryDirectory("tidemark-names")
        let schema = "CREATE TABLE t(id PRIMARY KEY, v TEXT); CREATE TABLE b(id BLOB PRIMARY KEY, v TEXT);"
        let a = try TestReplica("a", in: directory, schema: schema, preserve: [])
        _ = try a.store.execute(sql: "INSERT INTO t VALUES (1, 'one'), (1.5, 'half'), ('1.0', 'text')")
        for sql in [
            "INSERT INTO t VALUES (2.0, 'two')", "INSERT OR REPLACE INTO t VALUES (1.0, 'again')",
            "INSERT INTO b VALUES (-0.0, 'zero')", "UPDATE t SET id = 3.0 WHERE id = 1.5",
        ] {
            #expect(throws: StoreError.self, "\(sql)") { _ = try a.store.execute(sql: sql) }
        }
        #expect(try a.tables()["t"]?.rows.count == 3)
        let database = directory.file("adopted.sqlite")
        let queue = try DatabaseQueue(path: database)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t(id PRIMARY KEY, v TEXT); INSERT INTO t VALUES (4.0, 'four')")
        }
        try queue.close()
        #expect {
            _ = try Store.initialize(
                database,
                setup: Store.Setup(replicaName: "c", keyPath: directory.file("c.key")))
        } throws: { error in
            guard case StoreError.untrackableTable(_, let reason, _) = error else { return false }
            return reason.contains("real number equal to an integer")
        }
    }
}
