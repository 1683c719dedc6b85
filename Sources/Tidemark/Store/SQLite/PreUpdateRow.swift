import CSQLite
import GRDB
import TidemarkCore

/// The row one statement's INSERT or UPDATE leaves in a table, caught as SQLite is about to write
/// it, through the pre-update hook (sqlite.org/c3ref/preupdate_count.html): the merge hashes a row
/// it updated from the values SQLite writes, without reading the row back.
///
/// The hook is installed for one statement at a time, and only on a connection Tidemark opened:
/// a connection has one pre-update hook, and an app's may have its own (GRDB built with
/// `SQLITE_ENABLE_PREUPDATE_HOOK`, the session extension), which installing this one would replace
/// for good. Where the linked SQLite lacks the hook, nothing is caught.
final class PreUpdateRow {
    /// Whether the linked SQLite has the pre-update hook.
    static let isAvailable = tidemark_preupdate_available() != 0

    /// A caught row's columns, by their index in the table; valid only while `body` of `catching`
    /// reads them.
    struct Values {
        fileprivate let connection: OpaquePointer
        /// Told when SQLite could not give a column (out of memory): the row then goes unhashed.
        fileprivate let row: PreUpdateRow

        /// Appends column `index` as the row hash encodes a value (`RawStatement.appendEncodedValue`);
        /// returns false, having appended nothing, when it is NULL.
        func appendEncodedValue(_ index: Int32, asReal: Bool, to out: inout some CellOutput) -> Bool {
            var found: OpaquePointer?
            guard sqlite3_preupdate_new(connection, index, &found) == SQLITE_OK, let value = found else {
                row.unreadable = true
                return false
            }
            switch sqlite3_value_type(value) {
            case SQLITE_INTEGER where asReal: out.appendReal(Double(sqlite3_value_int64(value)))
            case SQLITE_INTEGER: out.appendInteger(sqlite3_value_int64(value))
            case SQLITE_FLOAT: out.appendReal(sqlite3_value_double(value))
            case SQLITE_TEXT: out.appendText(RawStatement.bytes(sqlite3_value_text(value), sqlite3_value_bytes(value)))
            case SQLITE_BLOB: out.appendBlob(RawStatement.bytes(sqlite3_value_blob(value), sqlite3_value_bytes(value)))
            default: return false
            }
            return true
        }
    }

    private let connection: OpaquePointer
    /// The table's name, NUL-terminated, for SQLite's comparison.
    private let table: [CChar]
    private let columnCount: Int32
    private let read: (Values) -> Int64
    /// What the current statement wrote to `table`: how many rows, and the hash of the last.
    private var rows = 0
    private var hash: Int64?
    /// Whether a column of the row being hashed could not be read.
    fileprivate var unreadable = false
    /// Told of the rows the statement's foreign-key actions change, when it watches for them:
    /// the connection has one hook.
    var effects: ActionEffects?

    /// Catches rows written to `table` (of `columnCount` columns, none generated) on `db`'s
    /// connection, hashing each with `read`; nil where the hook is not available.
    init?(_ db: Database, table: String, columnCount: Int, read: @escaping (Values) -> Int64) {
        guard Self.isAvailable, let connection = db.sqliteConnection else { return nil }
        self.connection = connection
        self.table = Array(table.utf8CString)
        self.columnCount = Int32(columnCount)
        self.read = read
    }

    /// Runs `body`, one statement that writes at most one row of the table, with the hook
    /// installed; returns the hash of the row it inserted or updated, or nil when it wrote no
    /// such row, or more than one, or one whose columns the hook did not show as expected.
    func catching(_ body: () throws -> Void) rethrows -> Int64? {
        rows = 0
        hash = nil
        sqlite3_preupdate_hook(connection, preUpdateCallback, Unmanaged.passUnretained(self).toOpaque())
        defer { sqlite3_preupdate_hook(connection, nil, nil) }
        try body()
        return rows == 1 ? hash : nil
    }

    fileprivate func caught(
        _ db: OpaquePointer, op: Int32, database: UnsafePointer<CChar>?, name: UnsafePointer<CChar>?
    ) {
        if let effects, sqlite3_preupdate_depth(db) > 0 {
            return effects.caught(db, op: op, database: database, name: name)
        }
        guard op == SQLITE_INSERT || op == SQLITE_UPDATE, sqlite3_preupdate_depth(db) == 0,
            let database, let name, sqlite3_stricmp(database, "main") == 0,
            table.withUnsafeBufferPointer({ sqlite3_stricmp(name, $0.baseAddress) }) == 0
        else { return }
        rows += 1
        hash = nil
        // A column count other than the table's: columns the registration does not know of.
        guard sqlite3_preupdate_count(db) == columnCount else { return }
        unreadable = false
        let read = read(Values(connection: db, row: self))
        hash = unreadable ? nil : read
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension PreUpdateRow: Sendable {}

private let preUpdateCallback:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, sqlite3_int64,
        sqlite3_int64
    ) -> Void = { context, db, op, database, name, _, _ in
        guard let context, let db else { return }
        Unmanaged<PreUpdateRow>.fromOpaque(context).takeUnretainedValue().caught(
            db, op: op, database: database, name: name)
    }
