import Foundation
import GRDB

/// The changes of the bundle benchmarks (workloads 2–4): on top of `base` rows, half the changes
/// insert new rows, a quarter update base rows (two columns each) and a quarter delete other base
/// rows. Every change touches a different row, so a session changeset holds exactly as many
/// changes as the bundle.
struct ChangeMix {
    var changes: Int
    /// Rows both sides hold before the changes.
    var base: Int { changes / 2 }
    var inserts: Int { changes / 2 }
    var updates: Int { changes / 4 }
    var deletes: Int { changes - inserts - updates }
    /// Rows per write transaction.
    var batch = 10_000

    /// Rows after the changes.
    var finalRowCount: Int { base + inserts - deletes }

    static let insertSQL = "INSERT INTO items(id, title, qty, price, payload) VALUES (?, ?, ?, ?, ?)"

    static func key(_ i: Int) -> String { String(format: "k%09d", i) }

    static func insertArguments(_ i: Int) -> StatementArguments {
        let payload = Data((0..<32).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) })
        return [key(i), "Item \(i)", i, Double(i) * 0.25, payload]
    }

    /// Writes the base rows, `batch` per call of `transaction`.
    func writeBase(_ transaction: (@escaping (Database) throws -> Void) throws -> Void) throws {
        try insert(0..<base, transaction)
    }

    /// Writes the changes, `batch` per call of `transaction`.
    func writeChanges(_ transaction: (@escaping (Database) throws -> Void) throws -> Void) throws {
        try insert(base..<base + inserts, transaction)
        for start in stride(from: 0, to: updates, by: batch) {
            let range = start..<min(start + batch, updates)
            try transaction { db in
                let statement = try db.cachedStatement(sql: "UPDATE items SET qty = qty + 1, title = ? WHERE id = ?")
                for i in range { try statement.execute(arguments: ["Updated \(i)", Self.key(i)]) }
            }
        }
        for start in stride(from: updates, to: updates + deletes, by: batch) {
            let range = start..<min(start + batch, updates + deletes)
            try transaction { db in
                let statement = try db.cachedStatement(sql: "DELETE FROM items WHERE id = ?")
                for i in range { try statement.execute(arguments: [Self.key(i)]) }
            }
        }
    }

    /// Writes the same changes as `writeChanges` with three set-based statements, so that SQLite
    /// alone does the work, with no statement or argument per row: the least any client can pay to
    /// write these rows (the payloads are random bytes of the same length).
    func writeChangesInSQL(_ db: Database) throws {
        try db.execute(
            sql: """
                WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO items(id, title, qty, price, payload)
                SELECT printf('k%09d', i), 'Item ' || i, i, i * 0.25, randomblob(32) FROM n
                """, arguments: [base, base + inserts - 1])
        try db.execute(
            sql: "UPDATE items SET qty = qty + 1, title = 'Updated ' || CAST(substr(id, 2) AS INTEGER) WHERE id < ?",
            arguments: [Self.key(updates)])
        try db.execute(
            sql: "DELETE FROM items WHERE id >= ? AND id < ?",
            arguments: [Self.key(updates), Self.key(updates + deletes)])
    }

    private func insert(_ rows: Range<Int>, _ transaction: (@escaping (Database) throws -> Void) throws -> Void) throws
    {
        for start in stride(from: rows.lowerBound, to: rows.upperBound, by: batch) {
            let range = start..<min(start + batch, rows.upperBound)
            try transaction { db in
                let statement = try db.cachedStatement(sql: Self.insertSQL)
                for i in range { try statement.execute(arguments: Self.insertArguments(i)) }
            }
        }
    }

    /// A fingerprint of the table that both sides must reach: row count and sums over columns.
    static func fingerprint(_ db: Database) throws -> [Int64] {
        let row = try Row.fetchOne(
            db, sql: "SELECT count(*), total(qty), sum(length(title)), sum(length(payload)) FROM items")!
        return [row[0], Int64(row[1] as Double), row[2] ?? 0, row[3] ?? 0]
    }
}
