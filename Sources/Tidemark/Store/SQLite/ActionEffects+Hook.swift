import CSQLite
import GRDB
import TidemarkCore

/// How `ActionEffects` watches a connection: the pre-update hook (sqlite.org/c3ref/preupdate_count.html),
/// installed for one statement at a time, or through `PreUpdateRow` when that one is installed.
extension ActionEffects {
    /// `db`'s connection where the linked SQLite has the hook and can give a row's old values.
    static func hookConnection(_ db: Database) -> OpaquePointer? {
        PreUpdateRow.isAvailable && tidemark_preupdate_old_available() != 0 ? db.sqliteConnection : nil
    }

    /// Runs `body`, a statement of the merge on a watched table, with the hook installed.
    func watching<T>(_ body: () throws -> T) rethrows -> T {
        guard let connection else { return try body() }
        sqlite3_preupdate_hook(connection, effectsCallback, Unmanaged.passUnretained(self).toOpaque())
        defer { sqlite3_preupdate_hook(connection, nil, nil) }
        return try body()
    }

    /// Called by the hook: notes a row of a tracked child table that an action deletes or
    /// updates (depth 1 and below: the merge's own statement is at depth 0). An update that
    /// changes the row's key is left alone: the row is then another row.
    func caught(_ db: OpaquePointer, op: Int32, database: UnsafePointer<CChar>?, name: UnsafePointer<CChar>?) {
        guard sqlite3_preupdate_depth(db) > 0, op == SQLITE_DELETE || op == SQLITE_UPDATE, let database, let name,
            sqlite3_stricmp(database, "main") == 0,
            let (table, layout) = children[String(cString: name).lowercased()]
        else { return }
        // Where the hook finds column `i`'s old and new values (`PreUpdateLayout`).
        let old: (Int) -> Int32
        let new: (Int) -> Int32
        switch layout {
        case .identity:
            guard sqlite3_preupdate_count(db) == Int32(table.columns.count) else { return }
            (old, new) = ({ Int32($0) }, { Int32($0) })
        case .mapped(let oldIndexes, let newIndexes):
            (old, new) = ({ oldIndexes[$0] }, { newIndexes[$0] })
        case .unknown:
            return
        }
        var before: [SQLValue] = []
        before.reserveCapacity(table.columns.count)
        for i in table.columns.indices {
            var value: OpaquePointer?
            guard sqlite3_preupdate_old(db, old(i), &value) == SQLITE_OK, let value else { return }
            before.append(Self.value(value))
        }
        if op == SQLITE_UPDATE {
            for i in table.keyIndexes {
                var value: OpaquePointer?
                guard sqlite3_preupdate_new(db, new(i), &value) == SQLITE_OK, let value, Self.value(value) == before[i]
                else { return }
            }
        }
        note(table, before: before)
    }

    private static func value(_ value: OpaquePointer) -> SQLValue {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let pointer = sqlite3_value_text(value) else { return .text("") }
            let count = Int(sqlite3_value_bytes(value))
            return .text(String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0, let pointer = sqlite3_value_blob(value) else { return .blob([]) }
            return .blob([UInt8](UnsafeRawBufferPointer(start: pointer, count: count)))
        default: return .null
        }
    }
}

private let effectsCallback:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, sqlite3_int64,
        sqlite3_int64
    ) -> Void = { context, db, op, database, name, _, _ in
        guard let context, let db else { return }
        Unmanaged<ActionEffects>.fromOpaque(context).takeUnretainedValue().caught(
            db, op: op, database: database, name: name)
    }
