import CSQLite
import GRDB

extension Database {
    /// SQLite's defensive flag on this connection (SQLITE_DBCONFIG_DEFENSIVE): while it is on, SQL
    /// cannot deliberately corrupt the database (`PRAGMA writable_schema`, `PRAGMA schema_version =`,
    /// writes to shadow tables). Setting it returns what it was.
    @discardableResult
    func setDefensive(_ on: Bool) -> Bool {
        let was = tidemark_sqlite_defensive(sqliteConnection, -1) != 0
        tidemark_sqlite_defensive(sqliteConnection, on ? 1 : 0)
        return was
    }
}
