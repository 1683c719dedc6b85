import CSQLite
import GRDB

extension Database {
    /// The most columns SQLite lets a table of this connection have (SQLITE_LIMIT_COLUMN).
    var columnLimit: Int { Int(sqlite3_limit(sqliteConnection, SQLITE_LIMIT_COLUMN, -1)) }

    /// The most parameters SQLite lets a statement of this connection have
    /// (SQLITE_LIMIT_VARIABLE_NUMBER).
    var parameterLimit: Int { Int(sqlite3_limit(sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1)) }
}
