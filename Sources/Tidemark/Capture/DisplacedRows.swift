import GRDB

/// Rows that SQLite deletes to make room for another under the REPLACE conflict resolution
/// (`INSERT OR REPLACE`, `UPDATE OR REPLACE`, a column declared `UNIQUE ON CONFLICT REPLACE`)
/// when the conflict is on a unique index other than the key. SQLite fires no delete trigger for
/// them while recursive triggers are off, its default, so the delete trigger cannot record them:
/// the writer would lose a row its peers keep, and their merge would then delete the new row as
/// the later writer of a value already taken.
///
/// Before a row is inserted, or updated with new values in a unique index, a `BEFORE` trigger
/// copies into the table's scratch table (`Bookkeeping.displacedTable`) what a tombstone keeps of
/// each row that holds those values under another key. The `AFTER` trigger of the same row first
/// records the delete of each of those rows that is gone, then empties the scratch table, then
/// records the row's own change: on every replica the displaced row is deleted before the new one
/// takes its values. A statement that keeps the row instead (`OR IGNORE`, an upsert, an error)
/// leaves its copies behind, and the next `BEFORE` trigger on the table empties them first.
///
/// A unique index on an expression or with a `WHERE` clause is not read: a row displaced through
/// one is still not recorded.
struct DisplacedRows {
    /// The table's unique indexes other than its key, each as its columns (indexes into the
    /// table's columns) with the collation the index compares them in, in index name order.
    let indexes: [[(column: Int, collation: String)]]

    /// The unique indexes of `table` in `db` that a REPLACE can displace a row through; nil when
    /// it has none.
    static func of(_ table: TrackedTable, in db: Database) throws -> DisplacedRows? {
        // Most tables have no such index: one cheap read says so.
        let names = try String.fetchAll(
            db,
            sql: """
                SELECT name FROM pragma_index_list(?) WHERE "unique" = 1 AND origin <> 'pk' AND partial = 0
                ORDER BY name
                """,
            arguments: [table.name])
        var indexes: [[(column: Int, collation: String)]] = []
        for name in names {
            var columns: [(column: Int, collation: String)] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno",
                arguments: [name])
            {
                // An expression (cid -2) or the rowid (-1): the index is left out.
                guard (row[0] as Int) >= 0, let columnName = row[1] as String?, let column = table.index(of: columnName)
                else {
                    columns = []
                    break
                }
                columns.append((column, row[2] as String? ?? "BINARY"))
            }
            if !columns.isEmpty { indexes.append(columns) }
        }
        return indexes.isEmpty ? nil : DisplacedRows(indexes: indexes)
    }

    /// The condition that the row `row` holds the values `values` (`NEW`) gives some unique index.
    /// NULLs never conflict, as in the index.
    func conflict(_ row: String, with values: String, columns: [String]) -> String {
        indexes.map { index in
            "("
                + index.map {
                    "\(row).\(columns[$0.column]) = \(values).\(columns[$0.column]) COLLATE \($0.collation.quotedIdentifier)"
                }
                .joined(separator: " AND ") + ")"
        }.joined(separator: " OR ")
    }

    /// Whether `NEW` differs from `OLD` in a column of some unique index, compared as stored.
    func changesIndexedValues(columns: [String]) -> String {
        Set(indexes.flatMap { $0.map(\.column) }).sorted()
            .map { "NEW.\(columns[$0]) IS NOT OLD.\(columns[$0]) COLLATE BINARY" }.joined(separator: " OR ")
    }
}
