import Foundation
import GRDB
import TidemarkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What went wrong with a store, on which input, and what the user can do about it.
///
/// `description` is the one line the CLI prints after `error: `; `hint`, when present, the next.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No file at the path.
    case storeNotFound(path: String)
    /// The file exists but is not a SQLite database.
    case notADatabase(path: String)
    /// The database has no Tidemark bookkeeping.
    case notInitialized(path: String)
    /// The store was written by a newer Tidemark.
    case newerFormat(path: String, found: Int, supported: Int)
    /// `init` was asked for something different from what the store already is.
    case alreadyInitialized(path: String, difference: String)
    /// A schema file could not be read or run.
    case schemaFailed(file: String, message: String)
    /// A named table does not exist.
    case unknownTable(String)
    /// A named column does not exist in its table.
    case unknownColumn(table: String, column: String)
    /// A table cannot be tracked.
    case untrackableTable(String, reason: String, hint: String)
    /// A tracked table's columns changed after tracking began.
    case trackedTableChanged(String, now: String)
    /// A replica name that cannot be used.
    case invalidReplicaName(String)
    /// A preserved column not of the form TABLE.COLUMN, or naming an untracked table.
    case invalidPreserve(String, reason: String)
    /// The store has no tables to track.
    case nothingToTrack(path: String)
    /// SQL given to `exec` failed; nothing was applied.
    case sqlFailed(message: String, sql: String)
    /// SQL given to `exec` tried to control the transaction itself.
    case transactionControlNotAllowed(statement: String)
    /// A token names history that was deleted.
    case historyTokenExpired(token: String, replica: Replica.ID, prunedThrough: Int64)
    /// A token claims more of this replica's history than the store ever had.
    case foreignToken(token: String)
    /// A token could not be parsed.
    case badToken(History.TokenError)
    /// The key file is missing, unreadable or not a key.
    case keyFile(path: String, problem: String)
    /// The key file's permissions let other users read or change it (`mode` is its permission bits).
    case keyFileExposed(path: String, mode: UInt16)
    /// SQLite reported an error on this store.
    case database(path: String, message: String)
    /// Another process held the store's write lock for longer than the busy timeout; nothing was changed.
    case storeLocked(path: String)
    /// The store cannot be written: `reason` says why (the file, its folder or its file system), `fix` what to do.
    case storeReadOnly(path: String, reason: String, fix: String)
    /// Writing the store ran out of room (`fault` is a full disk, a quota or the file size limit);
    /// SQLite rolled the write back.
    case storeFull(path: String, FileFault)
    /// The operating system reported an I/O error reading or writing the store.
    case storeIOError(path: String, message: String)
    /// An operation for a store attached to the app's writer was used on a store opened by path,
    /// or with another connection than the writer's.
    case notAttached(path: String)
    /// A transaction's author was set outside a write transaction.
    case authorOutsideTransaction
    /// No timestamp can follow this replica's newest (`newest`) with the wall clock reading `now`
    /// (milliseconds since 1970): the clock reads past what a timestamp holds (year 6429), or the
    /// newest is the largest timestamp there is. Nothing was written.
    case clockOutOfRange(now: Int64, newest: HLCTimestamp)
    /// An author or context name that history cannot carry to peers: empty, or longer than
    /// `BundleFormat.maxNameLength` bytes. `field` is "author" or "context name"; nothing was
    /// written.
    case invalidAuthorship(field: String, value: String, reason: String)
    /// A migration's SQL failed; nothing was changed.
    case migrationFailed(statement: String, message: String)
    /// A migration changed a tracked table in a way tracking cannot follow; nothing was changed.
    case unsupportedMigration(table: String, change: String)
    /// A migration would make another version than `held`, the one a peer's bundle held in the
    /// store was written under, at the same position: a fork (Protocol/schema.md §5); nothing was
    /// changed.
    case migrationForks(made: Schema.Version, held: Schema.Version)
    /// A migration would leave a tracked table with more column slots (its columns, and those
    /// dropped since it was tracked) than history has room for; nothing was changed.
    case tooManyColumnSlots(table: String, slots: Int, limit: Int)
    /// A migration asked to untrack a table that is not tracked.
    case notTracked(String)
    /// History was asked for the changes of a table the store has, but has never tracked: it holds
    /// none.
    case neverTracked(String)
    /// SQL run as tracked writes changes the schema of a tracked table; nothing was changed.
    case schemaChangeNeedsMigration(statement: String)
    /// SQL run as tracked writes changes one of Tidemark's own tables, indexes or triggers (a
    /// capture trigger dropped, say), or adds an object that names one (a trigger on
    /// `tidemark_changes`); nothing was changed.
    case bookkeepingChanged(statement: String, object: String)

    /// A table or column name as a message shows it: whole up to 64 characters, else its first 48
    /// and its length, so that a name of thousands of bytes does not fill the screen.
    static func shown(_ name: String) -> String {
        guard name.count > 64 else { return name }
        return "\(name.prefix(48))… (\(name.utf8.count) bytes)"
    }

    public var description: String {
        switch self {
        case .storeNotFound(let p): return "no store at \(p)"
        case .notADatabase(let p): return "\(p) is not a SQLite database"
        case .notInitialized(let p): return "\(p) is a SQLite database but not a Tidemark store"
        case .newerFormat(let p, let found, let supported):
            return "\(p) was created by a newer Tidemark (store format \(found); this build reads format \(supported))"
        case .alreadyInitialized(let p, let d): return "\(p) is already initialized: \(d)"
        case .schemaFailed(let f, let m): return "schema file \(f) failed: \(m)"
        case .unknownTable(let t): return "no table named '\(Self.shown(t))'"
        case .unknownColumn(let t, let c): return "table '\(Self.shown(t))' has no column '\(Self.shown(c))'"
        case .untrackableTable(let t, let reason, _): return "cannot track table '\(Self.shown(t))': \(reason)"
        case .trackedTableChanged(let t, let now):
            return "tracked table '\(t)' changed shape since tracking began: \(now)"
        case .invalidReplicaName(let n):
            return "invalid replica name '\(Self.shown(n))': use 1 to 64 letters, digits, '.', '_' or '-'"
        case .invalidPreserve(let a, let reason): return "invalid preserved column '\(a)': \(reason)"
        case .nothingToTrack(let p): return "\(p) has no tables to track"
        case .sqlFailed(let m, _): return "SQL failed, nothing was applied: \(m)"
        case .transactionControlNotAllowed(let s):
            return "'\(s)' is not allowed: the SQL runs as one transaction, which Tidemark begins and commits"
        case .historyTokenExpired(_, let r, let p):
            return
                "history token expired: replica \(r.short)'s transactions up to #\(p) were deleted from this store's history"
        case .foreignToken:
            return
                "the token is not from this store's history: it names transactions this store never heard of (this replica's, or only those of replicas it neither holds history of nor trusts)"
        case .badToken(let e): return e.description
        case .keyFile(let p, let problem): return "key file \(p): \(problem)"
        case .keyFileExposed(let p, let mode):
            return
                "key file \(p) is readable or writable by other users (mode \(String(format: "%04o", mode))): refusing to use it"
        case .database(let p, let m): return "\(p): \(m)"
        case .storeLocked(let p):
            return "\(p): the store stayed locked by another process past the busy timeout; the write was not made"
        case .storeReadOnly(let p, let reason, _): return "\(p): the store cannot be written: \(reason)"
        case .storeFull(let p, let fault): return "\(p): cannot write the store: \(fault); the write was rolled back"
        case .storeIOError(let p, let m): return "\(p): I/O error on the store file (\(m))"
        case .notAttached(let p): return "\(p): the store is not attached to this connection's writer"
        case .authorOutsideTransaction: return "a transaction's author can only be set inside a write transaction"
        case .clockOutOfRange(let now, let newest):
            let clock = HLCTimestamp(milliseconds: now, counter: 0)
            return now > HLCTimestamp.maxMilliseconds
                ? "the system clock reads \(clock.iso8601), past the last time a timestamp can hold (\(HLCTimestamp(milliseconds: HLCTimestamp.maxMilliseconds, counter: 0).iso8601)); nothing was written"
                : "no timestamp can follow this replica's newest, \(newest.description), the largest there is; nothing was written"
        case .invalidAuthorship(let field, let value, let reason):
            let shown = value.count > 40 ? "\(value.prefix(40))…" : value
            return "invalid \(field) '\(shown)': \(reason)"
        case .migrationFailed(let statement, let m):
            return "migration failed, nothing was changed: \(m) (in: \(statement))"
        case .unsupportedMigration(let t, let change):
            return "migration refused, nothing was changed: tracked table '\(t)': \(change)"
        case .migrationForks(let made, let held):
            return
                "migration refused, nothing was changed: it makes schema \(made) (\(made.change)), but a peer's bundle held "
                + "here was written under \(held) (\(held.change)) from the same v\(held.position - 1): the store would "
                + "fork from that peer for good"
        case .tooManyColumnSlots(let t, let slots, let limit):
            return
                "migration refused, nothing was changed: tracked table '\(t)' would have \(slots) column slots "
                + "(dropped columns keep theirs); at most \(limit) can be tracked"
        case .schemaChangeNeedsMigration(let statement):
            return "'\(statement)' changes the schema of a tracked table; nothing was changed"
        case .bookkeepingChanged(let statement, let object):
            return "'\(statement)' touches Tidemark's bookkeeping ('\(object)'); nothing was changed"
        case .notTracked(let t): return "table '\(t)' is not tracked, so it cannot be untracked; nothing was changed"
        case .neverTracked(let t): return "table '\(t)' was never tracked, so history holds no change to it"
        }
    }

    /// What the user can do, when there is something specific.
    public var hint: String? {
        switch self {
        case .storeNotFound: return "create it with Store.initialize"
        case .notInitialized: return "initialize it with Store.initialize to start tracking it"
        case .newerFormat: return "upgrade Tidemark to open this store"
        case .alreadyInitialized: return "open it with Store.open; Store.trackedTables says what it tracks"
        case .untrackableTable(_, _, let hint): return hint
        case .trackedTableChanged(let t, _):
            return
                "restore the table as it was, or adopt the change with Store.migrate(_:storeAt:): untrack: [\"\(t)\"] stops tracking the table as it is now (its history stays), and a later migration may track it again"
        case .nothingToTrack:
            return "create a table first (Setup.schema or the app's own migrations), or name one in Setup.tables"
        case .transactionControlNotAllowed: return "remove BEGIN/COMMIT/ROLLBACK/SAVEPOINT from the SQL"
        case .historyTokenExpired: return "fetch without a token to read the history that remains"
        case .foreignToken: return "use a token from this store's currentToken()"
        case .keyFile(let p, _): return "check \(p), or use the right key file"
        case .keyFileExposed(let p, _): return "restrict it to its owner: chmod 600 \(p)"
        case .storeLocked:
            return
                "another program (a sqlite3 shell, an app, another sync) holds a write transaction on the store: let it finish or close it, then run the command again"
        case .storeReadOnly(_, _, let fix): return fix
        case .storeFull(let p, let fault): return fault.hint(folder: FilePaths.folder(of: p), writing: true)
        case .notAttached:
            return
                "open the store with Store.open(writer) or Store.initialize(in: writer, setup:) and pass a Database of that writer"
        case .authorOutsideTransaction: return "call setTransactionAuthor inside writer.write { db in … }"
        case .clockOutOfRange:
            return
                "set the system clock right; a timestamp that far ahead came from a clock set wrong, here or on a peer"
        case .invalidAuthorship: return "give a name of 1 to \(BundleFormat.maxNameLength) bytes, or nil for none"
        case .unsupportedMigration:
            return
                "keep each table's key; rename a table or column in a migration of its own; untrack a table to drop it"
        case .migrationForks:
            return
                "make the migration the peer made first (Store.schemaWaits says which), then this one if it is still needed"
        case .tooManyColumnSlots:
            return
                "history keeps a value column per slot, within SQLite's column limit: keep the table's columns under the limit; "
                + "if dropped columns hold the slots, untrack the table and track it again in a later migration, which gives it a slot per column it has"
        case .schemaChangeNeedsMigration:
            return "run it as a migration (Store.migrate), which adapts tracking in the same transaction"
        case .neverTracked(let t):
            return
                "track it with a migration (Store.Migration(track: [\"\(t)\"])): its writes are recorded from then on"
        case .bookkeepingChanged:
            return
                "tidemark_ names are Tidemark's, and no trigger or view may name them: without the capture triggers a table's writes are not recorded and never replicate; change tracked tables with Store.migrate"
        case .storeIOError(let p, _):
            return
                "check the disk holding \(p) (system log, free space), then run `sqlite3 \(p) 'PRAGMA integrity_check'`"
        default: return nil
        }
    }
}

extension StoreError {
    /// The `StoreError` for `error` when it is a SQLite error on the store at `path`, or nil when
    /// it is not a SQLite error: for callers that received a database error the library did not
    /// explain, so a user still learns the store, the cause and the fix.
    public init?(sqliteError error: any Error, path: String) {
        guard let error = error as? DatabaseError else { return nil }
        self = Self.mapping(error, path: path)
    }

    /// Turns a SQLite failure on the store at `path` into the case a user can act on: a lock held
    /// past the busy timeout, a store that cannot be written, a full disk or file size limit, an
    /// I/O error. Other failures keep SQLite's message.
    static func mapping(_ error: DatabaseError, path: String) -> StoreError {
        let message = error.message ?? "\(error.resultCode)"
        switch error.resultCode {
        case .SQLITE_NOTADB: return .notADatabase(path: path)
        // Another connection's lock is SQLITE_BUSY; SQLITE_LOCKED is a conflict within this one
        // (a checkpoint asked for inside a transaction, say), which SQLite's message says.
        case .SQLITE_BUSY: return .storeLocked(path: path)
        case .SQLITE_READONLY:
            let (reason, fix) = StoreFileDiagnosis.whyNotWritable(path)
            return .storeReadOnly(path: path, reason: reason, fix: fix)
        case .SQLITE_FULL:
            return .storeFull(path: path, StoreFileDiagnosis.whyFull(path) ?? .noSpace)
        case .SQLITE_IOERR:
            // SQLite reports ENOSPC as SQLITE_FULL but a file size limit (EFBIG) as a write error.
            if let fault = StoreFileDiagnosis.whyFull(path) { return .storeFull(path: path, fault) }
            return .storeIOError(path: path, message: message)
        case .SQLITE_CANTOPEN:
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                return .database(path: path, message: "is a folder, not a store file")
            }
            let (reason, fix) = StoreFileDiagnosis.whyNotWritable(path)
            if reason != StoreFileDiagnosis.unknown { return .storeReadOnly(path: path, reason: reason, fix: fix) }
            return .database(path: path, message: "cannot be opened (\(message))")
        default: return .database(path: path, message: message)
        }
    }
}
