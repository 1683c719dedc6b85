import CSQLite
import GRDB

/// The switch of a connection's triggers of the main schema (`SQLITE_DBCONFIG_ENABLE_TRIGGER`).
enum MainSchemaTriggers {
    /// Whether the main schema holds a trigger that is not one of Tidemark's capture triggers.
    static func appTriggersExist(_ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db,
            sql:
                "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger' AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\')"
        ) == true
    }

    /// Runs `body` with the main schema's triggers off on `db`'s connection, and turns them on
    /// again, however `body` ends (TEMP triggers fire all the same). Only where they were on.
    static func off<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        guard let connection = db.sqliteConnection, tidemark_sqlite_triggers(connection, -1) == 1 else {
            return try body()
        }
        _ = tidemark_sqlite_triggers(connection, 0)
        defer { _ = tidemark_sqlite_triggers(connection, 1) }
        return try body()
    }
}
