import CSQLite
import GRDB

/// Where the pre-update hook finds each column of a table that has generated columns.
///
/// `sqlite3_preupdate_old` and `sqlite3_preupdate_new` number a row's values either by the
/// column's place among all the table's columns or among those stored (a VIRTUAL generated
/// column is not): SQLite 3.40.1 gives a rowid table's values both ways among the stored
/// columns, and a WITHOUT ROWID table's old values among all and its new ones among the stored.
/// Since that has differed between versions, the linked library is asked once per process, on a
/// table of its own in memory. A table without generated columns has its columns where they are.
enum PreUpdateLayout: Sendable {
    /// Column `i` of the table's tracked columns is at index `i`.
    case identity
    /// Column `i` is at `old[i]` for the old values and at `new[i]` for the new ones.
    case mapped(old: [Int32], new: [Int32])
    /// The linked SQLite numbers them in a way not known here: the hook's values are not used.
    case unknown

    /// Where the hook finds `table`'s columns in `db`.
    static func of(_ table: TrackedTable, in db: Database) throws -> PreUpdateLayout {
        let info = try Row.fetchAll(
            db, sql: "SELECT name, hidden FROM pragma_table_xinfo(?, 'main')", arguments: [table.name])
        guard info.contains(where: { ($0[1] as Int) != 0 }) else { return .identity }
        let withoutRowID = try Bool.fetchOne(
            db, sql: "SELECT wr FROM pragma_table_list(?) WHERE schema = 'main'", arguments: [table.name])
        let numbering = withoutRowID == true ? probed.withoutRowID : probed.rowid
        guard let oldAmongStored = numbering.old, let newAmongStored = numbering.new else { return .unknown }
        var all: [String: Int32] = [:]
        var stored: [String: Int32] = [:]
        for (place, row) in info.enumerated() {
            let name: String = row[0]
            all[name] = Int32(place)
            // 2 marks a VIRTUAL generated column (pragma_table_xinfo), which the row does not store.
            if (row[1] as Int) != 2 { stored[name] = Int32(stored.count) }
        }
        let place = { (amongStored: Bool, name: String) in amongStored ? stored[name] : all[name] }
        let old = table.columns.compactMap { place(oldAmongStored, $0) }
        let new = table.columns.compactMap { place(newAmongStored, $0) }
        guard old.count == table.columns.count, new.count == table.columns.count else { return .unknown }
        return .mapped(old: old, new: new)
    }

    /// How the linked SQLite numbers old and new values, per kind of table: true among the stored
    /// columns, false among all, nil neither (or the hook is missing).
    private static let probed = (
        rowid: probe(withoutRowID: false), withoutRowID: probe(withoutRowID: true)
    )

    private static func probe(withoutRowID: Bool) -> (old: Bool?, new: Bool?) {
        var connection: OpaquePointer?
        guard PreUpdateRow.isAvailable, tidemark_preupdate_old_available() != 0,
            sqlite3_open_v2(":memory:", &connection, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK,
            let connection
        else {
            sqlite3_close(connection)
            return (nil, nil)
        }
        defer { sqlite3_close(connection) }
        let table = """
            CREATE TABLE t(k TEXT PRIMARY KEY, g AS ('g') VIRTUAL, a)\(withoutRowID ? " WITHOUT ROWID" : "");
            INSERT INTO t(k, a) VALUES ('k', 'old')
            """
        guard sqlite3_exec(connection, table, nil, nil, nil) == SQLITE_OK else { return (nil, nil) }
        let found = ProbeResult()
        sqlite3_preupdate_hook(connection, probeCallback, Unmanaged.passUnretained(found).toOpaque())
        let updated = sqlite3_exec(connection, "UPDATE t SET a = 'new'", nil, nil, nil)
        sqlite3_preupdate_hook(connection, nil, nil)
        return updated == SQLITE_OK ? (found.old, found.new) : (nil, nil)
    }
}

/// What the probe's hook saw: where column `a` (third of all, second stored) was found.
private final class ProbeResult {
    var old: Bool?
    var new: Bool?
}

private let probeCallback:
    @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, sqlite3_int64,
        sqlite3_int64
    ) -> Void = { context, db, _, _, _, _, _ in
        guard let context, let db else { return }
        let found = Unmanaged<ProbeResult>.fromOpaque(context).takeUnretainedValue()
        func text(_ read: (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Int32, _ i: Int32)
            -> String?
        {
            var value: OpaquePointer?
            guard read(db, i, &value) == SQLITE_OK, let value, sqlite3_value_type(value) == SQLITE_TEXT,
                let bytes = sqlite3_value_text(value)
            else { return nil }
            return String(cString: bytes)
        }
        // Column `a` is third among all columns (index 2) and second among those stored (index 1).
        let place = { (read: (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Int32, a: String) in
            text(read, 2) == a ? false : text(read, 1) == a ? true : nil
        }
        found.old = place(sqlite3_preupdate_old, "old")
        found.new = place(sqlite3_preupdate_new, "new")
    }
