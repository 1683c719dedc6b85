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
}
