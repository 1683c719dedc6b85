import GRDB
import TidemarkCore

/// An `INSERT OR ABORT` of many rows in one statement into one table's `columns`, prepared once
/// per number of rows: for the writes of an import that run row after row into one table, where
/// a statement per row costs more than the row.
final class MultiRowInsert {
    private let db: Database
    private let target: String
    private let row: String
    private var statements: [Int: RawStatement] = [:]

    /// `table` and `columns` are SQL, quoted as they need to be.
    init(_ db: Database, into table: String, columns: [String]) {
        self.db = db
        target = "\(table)(\(columns.joined(separator: ", ")))"
        row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
    }

    /// How many rows of `width` values one statement takes: 64 at most (past that a statement
    /// costs more to prepare than it spares), fewer where SQLite allows fewer parameters.
    static func rowsPerStatement(width: Int, _ db: Database) -> Int {
        max(1, min(64, db.parameterLimit / max(1, width)))
    }

    /// Inserts `count` rows, `values` holding each row's columns in order, one row after another.
    func insert(_ values: [SQLValue], count: Int) throws {
        let statement: RawStatement
        if let made = statements[count] {
            statement = made
            statement.reset()
        } else {
            statement = try RawStatement(
                db,
                sql: "INSERT OR ABORT INTO \(target) VALUES " + repeatElement(row, count: count).joined(separator: ", ")
            )
            statements[count] = statement
        }
        try statement.execute(binding: values)
    }

    /// Inserts as `insert` does; returns false, having changed nothing, when a constraint refuses
    /// one of the rows (SQLite undoes the whole statement). A refusal that ended the transaction
    /// (`RAISE(ROLLBACK)` in a trigger) is thrown.
    func insertUnlessRefused(_ values: [SQLValue], count: Int) throws -> Bool {
        do {
            try insert(values, count: count)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT && db.isInsideTransaction {
            return false
        }
        return true
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension MultiRowInsert: Sendable {}
