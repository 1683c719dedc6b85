import Foundation
import GRDB
import Testing
import TidemarkCore

@testable import Tidemark

/// `MultiRowInsert` binds a statement's texts and blobs where they lie in one buffer
/// (`RawStatement.execute(binding:)`) instead of letting SQLite copy each: what it stores must be
/// what binding value by value stores.
@Suite struct MultiRowInsertTests {
    static let values: [SQLValue] = [
        .null, .integer(0), .integer(Int64.min), .real(-0.0), .real(.nan), .text(""), .text("word"),
        .text("before\u{0}after"), .text("\u{0}"), .text("ünïcødé 漢字 🙂"),
        .text(String(repeating: "long ", count: 5_000)),
        .blob([]), .blob([0]), .blob([0, 1, 2, 0]), .blob([UInt8](repeating: 0xAB, count: 70_000)),
    ]

    @Test func rowsInsertedTogetherHoldWhatRowsBoundOneByOneHold() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(
                sql:
                    "CREATE TABLE together(i INTEGER PRIMARY KEY, a, b); CREATE TABLE alone(i INTEGER PRIMARY KEY, a, b)"
            )
            // Every value beside every other, three rows to a statement, twice over: the buffer is
            // reused from run to run.
            let pairs = Self.values.flatMap { a in Self.values.map { b in (a, b) } }
            let insert = MultiRowInsert(db, into: "together", columns: ["i", "a", "b"])
            for start in stride(from: 0, to: pairs.count, by: 3) {
                let rows = pairs[start..<min(start + 3, pairs.count)]
                let values = rows.enumerated().flatMap {
                    [SQLValue.integer(Int64(start + $0.offset)), $0.element.0, $0.element.1]
                }
                try insert.insert(values, count: rows.count)
            }
            let one = try RawStatement(db, sql: "INSERT INTO alone(i, a, b) VALUES (?, ?, ?)")
            for (i, (a, b)) in pairs.enumerated() {
                one.reset()
                try one.bind([.integer(Int64(i)), a, b])
                try one.execute()
            }
            let compare = """
                SELECT count(*) FROM together t JOIN alone o USING (i)
                WHERE t.a IS o.a AND typeof(t.a) = typeof(o.a) AND t.b IS o.b AND typeof(t.b) = typeof(o.b)
                """
            #expect(try Int.fetchOne(db, sql: compare) == pairs.count)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM together") == pairs.count)
            // Text is taken up to its first NUL, as it is bound one by one.
            #expect(
                try String.fetchOne(db, sql: "SELECT a FROM together WHERE i = ?", arguments: [7 * Self.values.count])
                    == "before")
            #expect(try Int.fetchOne(db, sql: "SELECT length(b) FROM together WHERE i = 14") == 70_000)
            #expect(try String.fetchOne(db, sql: "SELECT typeof(b) FROM together WHERE i = 11") == "blob")
        }
    }
}
