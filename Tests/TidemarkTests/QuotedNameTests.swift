import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// Names with a double quote in them, which SQLite accepts for tables and columns: tracked,
/// captured, merged and migrated like any other.
@Suite struct QuotedNameTests {
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
}
