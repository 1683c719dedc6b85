import Foundation
import GRDB
import Testing
import TidemarkCore

@testable import Tidemark

/// A column's hash default (Protocol/exchange.md §8.1) must be what every row holds when it holds
/// the default: the rows that predate a column added with it, which SQLite reads through its own
/// evaluation of the default, as well as rows inserted without naming the column. Checked against
/// SQLite for each declared type and literal, in ordinary and STRICT tables.
@Suite struct HashDefaultsTests {
    static let declaredTypes = [
        "", "BLOB", "ANY", "INTEGER", "INT8", "NUMERIC", "BOOLEAN", "DATE", "TEXT", "VARCHAR(5)", "REAL", "DOUBLE",
        "FLOATING POINT",
    ]
    static let literals = [
        "1", "-1", "+7", "0", "1.0", "1.5", "-0.0", "0.0", "1e3", "5.", ".5", "-.25", "1e18", "1.5e300", "2.5e-300",
        "1e999", "-1e999", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "123456789012345678901", "0x10", "0x7fffffff", "0x80000000", "-0x10", "0x10000000000000000", "'a'", "' 12'",
        "'12'", "'1.0'", "'-'", "''", "' '", "'x1'", "'it''s'", "X'0a'", "X''", "TRUE", "FALSE", "true", "NULL",
        "CURRENT_TIMESTAMP", "\"quoted\"",
    ]

    @Test(arguments: [false, true])
    func everyRowHoldsTheHashDefaultAsItIs(strict: Bool) throws {
        let queue = try DatabaseQueue()
        var found = 0
        try queue.write { db in
            for declaredType in Self.declaredTypes {
                let type =
                    strict
                    ? ["INTEGER", "INT", "REAL", "TEXT", "BLOB", "ANY"].first { $0 == declaredType } : declaredType
                guard let type, !(strict && type.isEmpty) else { continue }
                for literal in Self.literals {
                    try db.execute(sql: "DROP TABLE IF EXISTS t")
                    try db.execute(sql: "CREATE TABLE t(id INTEGER PRIMARY KEY)\(strict ? " STRICT" : "")")
                    try db.execute(sql: "INSERT INTO t(id) VALUES (1)")
                    do {
                        try db.execute(sql: "ALTER TABLE t ADD COLUMN v \(type) DEFAULT \(literal)")
                        try db.execute(sql: "INSERT INTO t(id) VALUES (2)")
                    } catch {
                        continue  // SQLite refuses the default for this column: nothing to hash
                    }
                    let affinity = ColumnAffinity(declaredType: type)
                    guard let hashDefault = try HashDefaults.of(["v"], in: "t", db).defaults[0] else { continue }
                    found += 1
                    let statement = try RawStatement(db, sql: "SELECT v FROM t ORDER BY id")
                    for row in ["predating the column", "inserted without it"] {
                        #expect(try statement.step())
                        var cell: [UInt8] = []
                        statement.appendEncodedValue(0, asReal: affinity == .real, to: &cell)
                        #expect(
                            cell == RowDigest.encodedValue(hashDefault),
                            "\(type) DEFAULT \(literal): a row \(row) holds another value than \(hashDefault)")
                    }
                }
            }
        }
        // Most literals are hash defaults of most columns; the test is not vacuous.
        #expect(found > (strict ? 60 : 250))
    }

    @Test func commonDefaultsAreHashDefaults() throws {
        let queue = try DatabaseQueue()
        let defaults = try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE t(id TEXT PRIMARY KEY, status TEXT DEFAULT 'draft', count INTEGER NOT NULL DEFAULT 0,
                    ratio REAL DEFAULT 1, flag BOOLEAN DEFAULT FALSE, created TEXT DEFAULT CURRENT_TIMESTAMP, code TEXT DEFAULT 7)
                    """)
            return try HashDefaults.of(["id", "status", "count", "ratio", "flag", "created", "code"], in: "t", db)
                .defaults
        }
        #expect(defaults == [nil, .text("draft"), .integer(0), .real(1), .integer(0), nil, nil])
    }
}
