import TidemarkCore

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
    /// A `--preserve` argument not of the form TABLE.COLUMN, or naming an untracked table.
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
    /// SQLite reported an error on this store.
    case database(path: String, message: String)

    public var description: String {
        switch self {
        case .storeNotFound(let p): return "no store at \(p)"
        case .notADatabase(let p): return "\(p) is not a SQLite database"
        case .notInitialized(let p): return "\(p) is a SQLite database but not a Tidemark store"
        case .newerFormat(let p, let found, let supported):
            return "\(p) was created by a newer Tidemark (store format \(found); this build reads format \(supported))"
        case .alreadyInitialized(let p, let d): return "\(p) is already initialized: \(d)"
        case .schemaFailed(let f, let m): return "schema file \(f) failed: \(m)"
        case .unknownTable(let t): return "no table named '\(t)'"
        case .unknownColumn(let t, let c): return "table '\(t)' has no column '\(c)'"
        case .untrackableTable(let t, let reason, _): return "cannot track table '\(t)': \(reason)"
        case .trackedTableChanged(let t, let now): return "tracked table '\(t)' changed shape since tracking began: \(now)"
        case .invalidReplicaName(let n): return "invalid replica name '\(n)': use 1 to 64 letters, digits, '.', '_' or '-'"
        case .invalidPreserve(let a, let reason): return "invalid --preserve '\(a)': \(reason)"
        case .nothingToTrack(let p): return "\(p) has no tables to track"
        case .sqlFailed(let m, _): return "SQL failed, nothing was applied: \(m)"
        case .transactionControlNotAllowed(let s): return "'\(s)' is not allowed: exec runs all its SQL as one transaction"
        case .historyTokenExpired(_, let r, let p):
            return "history token expired: replica \(r.short)'s transactions up to #\(p) were deleted from this store's history"
        case .foreignToken: return "the token is not from this store's history (it claims transactions this replica never made)"
        case .badToken(let e): return e.description
        case .keyFile(let p, let problem): return "key file \(p): \(problem)"
        case .database(let p, let m): return "\(p): \(m)"
        }
    }

    /// What the user can do, when there is something specific.
    public var hint: String? {
        switch self {
        case .storeNotFound: return "create one with `sync init --store PATH --replica NAME`"
        case .notInitialized: return "run `sync init --store PATH --replica NAME` to start tracking it"
        case .newerFormat: return "upgrade Tidemark to open this store"
        case .alreadyInitialized: return "see `sync status` for what the store tracks"
        case .untrackableTable(_, _, let hint): return hint
        case .trackedTableChanged: return "restore the table's columns; changing the schema of a tracked table is not supported"
        case .nothingToTrack: return "create a table first (--schema FILE.sql), or name one with --track"
        case .transactionControlNotAllowed: return "remove BEGIN/COMMIT/ROLLBACK/SAVEPOINT from the SQL"
        case .historyTokenExpired: return "fetch without --since to read the history that remains"
        case .foreignToken: return "use a token printed by `sync token` for this store"
        default: return nil
        }
    }
}
