import GRDB
import TidemarkCore

/// Reads and writes user rows by key, for the merge engine (capture triggers are lifted while it runs).
struct RowAccess {
    let db: Database
    let table: TrackedTable
    private let quotedTable: String
    private let keyMatch: String
    private let selectSQL: String
    private let deleteSQL: String

    init(db: Database, table: TrackedTable) {
        self.db = db
        self.table = table
        quotedTable = table.name.quotedDatabaseIdentifier
        keyMatch = table.keyColumns.map { "\($0.quotedDatabaseIdentifier) = ?" }.joined(separator: " AND ")
        selectSQL = "SELECT \(table.columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")) FROM \(quotedTable) WHERE \(keyMatch)"
        deleteSQL = "DELETE FROM \(quotedTable) WHERE \(keyMatch)"
    }

    /// Every column's value, by column index, or nil when the row is absent.
    func values(key: [SQLValue]) throws -> [SQLValue]? {
        let statement = try db.cachedStatement(sql: selectSQL)
        return try Row.fetchOne(statement, arguments: StatementArguments(key)).map { row in
            Array(row.databaseValues.map(SQLValue.init))
        }
    }

    /// Sets columns (index, value) of an existing row, or inserts the row with the key and those columns.
    func write(key: [SQLValue], columns: [(Int, SQLValue)], exists: Bool) throws {
        if exists {
            guard !columns.isEmpty else { return }
            let sets = columns.map { "\(table.columns[$0.0].quotedDatabaseIdentifier) = ?" }.joined(separator: ", ")
            try db.cachedStatement(sql: "UPDATE \(quotedTable) SET \(sets) WHERE \(keyMatch)")
                .execute(arguments: StatementArguments(columns.map(\.1) + key))
        } else {
            let all = zip(table.keyIndexes, key).map { ($0, $1) } + columns
            let names = all.map { table.columns[$0.0].quotedDatabaseIdentifier }.joined(separator: ", ")
            try db.cachedStatement(sql: "INSERT INTO \(quotedTable)(\(names)) VALUES (\(all.map { _ in "?" }.joined(separator: ", ")))")
                .execute(arguments: StatementArguments(all.map(\.1)))
        }
    }

    /// Deletes the row with `key`, if present.
    func delete(key: [SQLValue]) throws {
        try db.cachedStatement(sql: deleteSQL).execute(arguments: StatementArguments(key))
    }
}
