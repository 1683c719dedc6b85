import Foundation
import GRDB
import TidemarkCore

extension TrackedTable {
    /// Why the names of table `table` and its `columns` cannot be tracked, and what to do; nil when
    /// they can. A bundle carries names of 1 to `BundleFormat.maxNameLength` bytes (Protocol/
    /// bundle.md §4.1), and Tidemark tells names apart as Swift strings do, which take two
    /// spellings of one text in different Unicode normal forms (`café` composed and decomposed)
    /// for one name, where SQLite keeps two: such a pair in a table, or a table named so beside
    /// another, would be one column or table here and two in the schema.
    static func nameRefusal(of table: String, columns: [String], in db: Database) throws
        -> (reason: String, hint: String)?
    {
        let rename = "rename it, e.g. `ALTER TABLE … RENAME COLUMN …` from the sqlite3 shell"
        if let why = unsupported(table) { return ("its name \(why)", "rename the table") }
        if let column = columns.first(where: { unsupported($0) != nil }) {
            return ("the name of column '\(StoreError.shown(column))' \(unsupported(column)!)", rename)
        }
        var seen: [String: String] = [:]
        for column in columns {
            if let other = seen[column] {
                return (
                    "its columns '\(other)' and '\(column)' have names that differ only in Unicode normalization",
                    rename
                )
            }
            seen[column] = column
        }
        let tables = try String.fetchAll(
            db, sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> ?", arguments: [table])
        if let other = tables.first(where: { $0 == table }) {
            return (
                "its name and that of table '\(other)' differ only in Unicode normalization",
                "rename one of the two tables"
            )
        }
        return nil
    }

    /// Why `name` cannot name a table or column in a bundle; nil when it can.
    private static func unsupported(_ name: String) -> String? {
        let bytes = name.utf8.count
        if bytes == 0 { return "is empty, and a bundle carries names of at least one byte" }
        if bytes > BundleFormat.maxNameLength {
            return "is \(bytes) bytes long, and a bundle carries names of at most \(BundleFormat.maxNameLength)"
        }
        return nil
    }

    /// Refuses, with `StoreError.untrackableTable`, a table whose rows hold a key that is a real
    /// number equal to an integer in a column that keeps both classes: SQLite takes it for the
    /// integer key, replicas for another (the capture triggers refuse such a write from now on).
    static func checkIntegralRealKeys(of table: TrackedTable, in db: Database) throws {
        let affinities = try ColumnAffinity.of(table.columns, in: table.name, db)
        let columns = table.keyIndexes.filter { CaptureTriggers.keepsStorageClassOfEqualNumbers(affinities[$0]) }
            .map { table.columns[$0].quotedIdentifier }
        guard !columns.isEmpty else { return }
        let integral = columns.map { "(typeof(\($0)) = 'real' AND \($0) = CAST(\($0) AS INTEGER))" }
            .joined(separator: " OR ")
        if try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM \(table.name.quotedIdentifier) WHERE \(integral))") == true
        {
            throw StoreError.untrackableTable(
                table.name,
                reason:
                    "some of its rows have a key that is a real number equal to an integer (1.0 for 1), which SQLite takes for the integer key and other replicas for another",
                hint: "write those keys as integers, then track the table")
        }
    }
}
