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
/// each row that holds those values under another key, tagged with the key of the row being
/// written. The `AFTER` trigger of a row first records the delete of each row tagged with its key
/// that is gone, and drops the copies so tagged, then records the row's own change: on every
/// replica the displaced row is deleted before the new one takes its values. Writes nested between
/// the two triggers of a row (a foreign key's `SET NULL`, an app's trigger, on that row too) touch
/// only the copies tagged with their own row's key, and a row deleted with its trigger fired has
/// its copies dropped. A statement that keeps the other row (`OR IGNORE`, an upsert, an error)
/// leaves its copies behind; they are dropped with the row's next write, whenever the
/// triggers are made again, and by every import.
///
/// A unique index on an expression or with a `WHERE` clause is not read: a row displaced through
/// one is not recorded, and the row digest does not show it either (it follows captured changes).
struct DisplacedRows {
    /// The table's unique indexes other than its key, each as its columns (by name: a generated
    /// column is not tracked, but a trigger sees its value) with the collation the index compares
    /// them in, in index name order.
    let indexes: [[(column: String, collation: String)]]

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
        var indexes: [[(column: String, collation: String)]] = []
        for name in names {
            var columns: [(column: String, collation: String)] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno",
                arguments: [name])
            {
                // An expression (cid -2) or the rowid (-1): the index is left out.
                guard (row[0] as Int) >= 0, let column = row[1] as String? else {
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
    func conflict(_ row: String, with values: String) -> String {
        indexes.map { index in
            let columns = index.map {
                let name = $0.column.quotedIdentifier
                return "\(row).\(name) = \(values).\(name) COLLATE \($0.collation.quotedIdentifier)"
            }
            return "(" + columns.joined(separator: " AND ") + ")"
        }.joined(separator: " OR ")
    }

    /// Whether `NEW` differs from `OLD` in a column of some unique index, compared as stored.
    func changesIndexedValues() -> String {
        Set(indexes.flatMap { $0.map(\.column) }).sorted().map(\.quotedIdentifier)
            .map { "NEW.\($0) IS NOT OLD.\($0) COLLATE BINARY" }.joined(separator: " OR ")
    }
}
