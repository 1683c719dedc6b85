import CSQLiteSession
import Foundation
import GRDB

/// The SQLite session extension, the strongest baseline for a change bundle: a session attached to
/// a plain connection records the changes to a table, and turns them into a changeset that
/// `sqlite3changeset_apply` replays elsewhere. Every raw session call of the benchmark is here.
///
/// The connection must not have a pre-update hook of its own (a session installs one); GRDB on
/// Linux installs none.
final class SessionRecorder {
    private let session: OpaquePointer

    /// Starts recording every change to `table` made on `db`'s connection from now on.
    init(db: Database, table: String) throws {
        var created: OpaquePointer?
        var status = sqlite3session_create(db.sqliteConnection, "main", &created)
        guard status == SQLITE_OK, let created else { throw SessionError.call("sqlite3session_create", status) }
        status = sqlite3session_attach(created, table)
        guard status == SQLITE_OK else {
            sqlite3session_delete(created)
            throw SessionError.call("sqlite3session_attach", status)
        }
        session = created
    }

    deinit { sqlite3session_delete(session) }

    /// The changeset of everything recorded so far (the session keeps recording).
    func changeset() throws -> Data {
        var count: Int32 = 0
        var bytes: UnsafeMutableRawPointer?
        let status = sqlite3session_changeset(session, &count, &bytes)
        guard status == SQLITE_OK, let bytes else { throw SessionError.call("sqlite3session_changeset", status) }
        defer { sqlite3_free(bytes) }
        return Data(bytes: bytes, count: Int(count))
    }

    /// Applies `changeset` to `db`'s connection in one savepoint, aborting on any conflict (the
    /// benchmark's target holds exactly the base state, so there must be none).
    static func apply(_ changeset: Data, to db: Database) throws {
        let abortOnConflict: @convention(c) (UnsafeMutableRawPointer?, Int32, OpaquePointer?) -> Int32 = { _, _, _ in
            SQLITE_CHANGESET_ABORT
        }
        let status = changeset.withUnsafeBytes { buffer in
            sqlite3changeset_apply(
                db.sqliteConnection, Int32(buffer.count), UnsafeMutableRawPointer(mutating: buffer.baseAddress), nil,
                abortOnConflict, nil)
        }
        guard status == SQLITE_OK else { throw SessionError.call("sqlite3changeset_apply", status) }
    }
}

/// A session-extension call that failed.
enum SessionError: Error, CustomStringConvertible {
    case call(String, Int32)

    var description: String {
        switch self {
        case .call(let name, let status): "\(name) failed: \(String(cString: sqlite3_errstr(status)))"
        }
    }
}
