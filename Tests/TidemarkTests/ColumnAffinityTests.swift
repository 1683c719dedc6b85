import Foundation
import GRDB
import Testing
import TidemarkCore

@testable import Tidemark

/// `ColumnAffinity.keeps` vouches that SQLite stores a value as given, which lets a merge hash a
/// row it wrote without reading it back (Protocol/exchange.md §8.1). Checked against SQLite.
@Suite struct ColumnAffinityTests {
    static let declaredTypes = [
        "", "BLOB", "ANY", "INTEGER", "INT", "NUMERIC", "DECIMAL(10,2)", "BOOLEAN", "TEXT", "VARCHAR(20)", "REAL",
        "DOUBLE", "FLOAT",
    ]
    static let values: [SQLValue] = [
        .null, .integer(0), .integer(7), .integer(-3), .integer(Int64.max), .integer(1 << 60), .real(1.5),
        .real(2.0), .real(-0.0), .real(1e300), .real(.infinity), .real(.nan), .real(9.3e18), .text(""),
        .text("word"), .text("7"), .text(" 7 "), .text("1.5"), .text("-2"), .text(".5"), .text("0x10"),
        .text("1e3"), .text("x7"), .text(" "), .blob([]), .blob([0, 1, 2]),
    ]

    @Test(arguments: declaredTypes)
    func aValueItKeepsReadsBackAsWritten(declaredType: String) throws {
        let queue = try DatabaseQueue()
        let affinity = ColumnAffinity(declaredType: declaredType)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE t(v \(declaredType))")
            for value in Self.values {
                try db.execute(sql: "DELETE FROM t")
                let insert = try RawStatement(db, sql: "INSERT INTO t(v) VALUES (?)")
                try insert.bind([value])
                try insert.execute()
                let read = try RawStatement(db, sql: "SELECT v FROM t")
                _ = try read.step()
                let stored = read.value(0)
                // A REAL column reads an integer back as the equal real; the hash takes it so.
                var expected = value
                if affinity == .real, case .integer(let i) = value { expected = .real(Double(i)) }
                // Compared as the hash encodes them: every byte, so -0.0 is not 0.0.
                if affinity.keeps(value) {
                    #expect(
                        Self.encoded(stored) == Self.encoded(expected),
                        "\(declaredType): \(value) read back as \(stored)")
                }
            }
        }
    }

    static func encoded(_ value: SQLValue) -> [UInt8] {
        var out: [UInt8] = []
        RowDigest.appendValue(value, to: &out)
        return out
    }

    @Test func itVouchesForTheValuesAppsWriteMost() {
        #expect(ColumnAffinity(declaredType: "TEXT").keeps(.text("7")))
        #expect(ColumnAffinity(declaredType: "INTEGER").keeps(.integer(7)))
        #expect(ColumnAffinity(declaredType: "REAL").keeps(.real(2.0)))
        #expect(ColumnAffinity(declaredType: "REAL").keeps(.integer(2)))
        #expect(ColumnAffinity(declaredType: "").keeps(.real(.infinity)))
        #expect(!ColumnAffinity(declaredType: "INTEGER").keeps(.text("7")))
        #expect(!ColumnAffinity(declaredType: "INTEGER").keeps(.real(2.0)))
        #expect(!ColumnAffinity(declaredType: "TEXT").keeps(.integer(7)))
        #expect(!ColumnAffinity(declaredType: "").keeps(.real(.nan)))
    }
}
