import Foundation
import GRDB
import TidemarkCore

/// A replica's history-tracked SQLite store.
///
/// The store file stays an ordinary SQLite database: any client may read and write the tracked
/// tables, and its writes are captured. Writes made through `write(author:contextName:_:)` or
/// `execute(sql:author:contextName:)` become exactly one transaction each.
///
/// ```swift
/// let schema = "CREATE TABLE note(id TEXT PRIMARY KEY, title TEXT NOT NULL);"
/// let (store, _) = try Store.initialize(
///     "notes.db", setup: Store.Setup(replicaName: "laptop", schema: ("schema.sql", schema)))
/// _ = try store.execute(sql: "INSERT INTO note VALUES ('n1', 'Groceries')", author: "ana")
///
/// // Share through a folder that every device syncs (or a WebDAV collection's URL).
/// let key = try KeyFile.load("notes.db.key")
/// _ = try store.push(to: "/Shared/notes", key: key)
/// let pulled = try store.pull(from: "/Shared/notes", key: key)
/// print(pulled.changedTables)
/// ```
public final class Store: Sendable {
    /// Settings for opening a store.
    public struct Options: Sendable {
        /// The wall clock behind the hybrid logical clock.
        public var clock: any WallClock
        /// How long to wait for another process's write lock before failing.
        public var busyTimeout: TimeInterval
        /// The process id recorded on this process's transactions.
        public var processID: Int32

        /// Creates options; the defaults suit applications.
        public init(
            clock: any WallClock = SystemWallClock(), busyTimeout: TimeInterval = 30,
            processID: Int32 = ProcessInfo.processInfo.processIdentifier
        ) {
            self.clock = clock
            self.busyTimeout = busyTimeout
            self.processID = processID
        }
    }

    /// The store file.
    public let path: String
    /// This store's replica.
    public let replica: Replica
    /// Every table whose changes replicate, as last read from the store: the user's tracked tables
    /// and Tidemark's own membership table.
    var replicatedTables: [TrackedTable] { registrations.tables }
    /// The user's tracked tables, as last read from the store (a migration updates them).
    public var trackedTables: [TrackedTable] { replicatedTables.filter { !$0.isInternal } }
    /// The registrations, re-read when the schema changed (a migration, here or in another process).
    let registrations: TrackedTable.Registrations
    private let adoption = Locked<MigrationSummary?>(nil)
    private let restoration = Locked<[String]>([])
    /// The schema cookie at which the capture triggers were last found as this build makes them.
    private let triggersChecked = Locked<Int?>(nil)
    /// This replica's Ed25519 public key (32 bytes); its identity is derived from it.
    public let publicKey: [UInt8]
    /// The connection every read and write goes through: the store's own `DatabaseQueue` when
    /// opened by path, or the app's own writer when attached to it.
    let database: any DatabaseWriter
    let options: Options
    /// Ends the marks of, seals, and follows the schema changes of what the app commits on the
    /// writer the store is attached to; nil when the store owns its connection.
    let attachedWriter: AttachedWriter?

    init(
        path: String, database: any DatabaseWriter, attachedWriter: AttachedWriter? = nil, replica: Replica,
        publicKey: [UInt8], registrations: [TrackedTable], options: Options
    ) {
        self.path = path
        self.publicKey = publicKey
        self.database = database
        self.replica = replica
        self.registrations = TrackedTable.Registrations(registrations)
        self.options = options
        self.attachedWriter = attachedWriter
    }

    /// Opens an initialized store with a connection of its own.
    public static func open(_ path: String, options: Options = Options()) throws -> Store {
        let database = try StoreConnection.open(path, busyTimeout: options.busyTimeout)
        return try Store.load(path: path, database: database, options: options)
    }

    /// Opens the store in the app's own database and attaches to it: every read and write of the
    /// store — sealing, import, pull, prune, snapshots, observation — goes through `writer`, so
    /// GRDB observation on it sees what a sync changes. Writes the app makes through `writer` are
    /// captured; `setTransactionAuthor(_:contextName:in:)` and `setDefaultTransactionAuthor(_:contextName:)`
    /// name their author. `options.busyTimeout` is not used: the writer's own configuration decides.
    public static func open(_ writer: some DatabaseWriter, options: Options = Options()) throws -> Store {
        try Store.load(path: writer.path, database: writer, attached: true, options: options)
    }

    /// Opens the store at `path` and runs `migration` on it, for a store that `open` refuses: another
    /// client changed a tracked table in a way no migration can be inferred from (dropped the
    /// table, or rebuilt it with columns both dropped and added), and `migration` says what the
    /// change was (`untrack` for a dropped table, say). `open` adopts any other such change itself.
    @discardableResult
    public static func migrate(_ migration: Migration, storeAt path: String, options: Options = Options()) throws
        -> MigrationSummary
    {
        let database = try StoreConnection.open(path, busyTimeout: options.busyTimeout)
        let store = try Store.load(path: path, database: database, options: options, adopting: false)
        let summary = try store.migrate(migration)
        try store.restoreCaptureTriggers()
        return summary
    }

    /// `adopting`: adopt a schema change another client made as a migration, or refuse to open
    /// when it cannot be; when false, leave it to the caller's migration.
    static func load(
        path: String, database: any DatabaseWriter, attached: Bool = false, options: Options, adopting: Bool = true
    ) throws -> Store {
        do {
            let loaded = try database.read { db in
                guard try Bookkeeping.isInitialized(db) else { throw StoreError.notInitialized(path: path) }
                let format = try Int.fromDatabaseValue(Bookkeeping.meta(db, Bookkeeping.Meta.format)) ?? 0
                guard format <= Bookkeeping.formatVersion else {
                    throw StoreError.newerFormat(path: path, found: format, supported: Bookkeeping.formatVersion)
                }
                let name = String.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.replicaName)) ?? ""
                let key = Data.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.publicKey)) ?? Data()
                let tables = try TrackedTable.fetchAll(db, includingUntracked: true)
                var changed: StoreError?
                for table in tables where changed == nil && table.untrackedAt == nil {
                    do { try table.checkShape(in: db) } catch let error as StoreError { changed = error }
                }
                return (name, key, tables, try Bookkeeping.needsUpgrade(db), changed)
            }
            let (name, key, _, needsUpgrade, changed) = loaded
            var tables = loaded.2
            if needsUpgrade {
                // Stores made by an earlier build: add what they lack. A store opened read-only
                // cannot, and is read as it is; any other failure is reported.
                do {
                    try database.write { db in try Bookkeeping.upgrade(db) }
                    tables = try database.read { db in try TrackedTable.fetchAll(db, includingUntracked: true) }
                } catch let error as DatabaseError where error.resultCode == .SQLITE_READONLY {}
            }
            let replica = Replica(name: name, id: Replica.ID(publicKey: Array(key)))
            let attachedWriter =
                attached ? try AttachedWriter.attach(to: database, replica: replica.id, options: options) : nil
            let store = Store(
                path: path, database: database, attachedWriter: attachedWriter, replica: replica, publicKey: Array(key),
                registrations: tables, options: options)
            if let changed {
                guard adopting else { return store }
                let lost = try database.read { db in try CaptureTriggers.lost(tables, in: db) }
                try store.adoptSchemaChange(refusedAs: changed)
                if !lost.isEmpty { try database.write { db in try store.noteLostTriggers(lost, db) } }
            }
            try store.restoreCaptureTriggers()
            try store.attachedWriter?.follow(for: store, on: database)
            return store
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreConnection.mapped(error, path: path)
        }
    }

    /// What `open` adopted as a migration: a schema change another client made to tracked tables
    /// (columns added by `ALTER TABLE` in the `sqlite3` shell, say). The values rows hold in an
    /// added column, other than its default (NULL without one), are recorded as updates (`adopt`),
    /// since the capture triggers did not know the column when they were written. On an attached
    /// writer, also the last such change the app committed without `migrate(_:in:)`, adopted once
    /// it committed. Nil when there was none.
    public var adoptedSchemaChange: MigrationSummary? { adoption.withLock { $0 } }

    /// Adopts, as a migration, a schema change another client made behind Tidemark's back, when it
    /// is one a migration supports; otherwise throws `refusal` with what it found.
    private func adoptSchemaChange(refusedAs refusal: StoreError) throws {
        do {
            let summary = try migrate(Migration())
            adoption.withLock { $0 = summary }
        } catch let error as StoreError {
            switch error {
            case .unsupportedMigration(let table, let change):
                throw StoreError.trackedTableChanged(table, now: change)
            case .tooManyColumnSlots:
                // Untracking and tracking again would not help: say the limit.
                throw error
            default:
                throw refusal
            }
        }
    }

    /// Notes the tables of `ids` in `restoredCaptureTriggers`, by the names they have now: their
    /// capture triggers were missing before a schema change another client made was adopted (the
    /// table rebuilt with other columns), which made them anew. Writes made meanwhile went
    /// unrecorded, so their digests are forgotten, to be counted again.
    private func noteLostTriggers(_ ids: Set<Int64>, _ db: Database) throws {
        guard !ids.isEmpty else { return }
        for id in ids { try RowDigests.forget(id, db) }
        let names = try TrackedTable.fetchAll(db).filter { ids.contains($0.id) }.map(\.name)
        db.afterNextTransaction(onCommit: { [restoration] _ in
            restoration.withLock { restored in restored += names.filter { !restored.contains($0) } }
        })
    }

    /// After a commit on the attached writer that changed the schema (`AttachedWriter`):
    /// adopts what the app changed in tracked tables without `migrate(_:in:)`, as `open` would,
    /// and puts back capture triggers it removed (a table rebuilt with the same columns), so that
    /// its next writes are captured. Throws `StoreError` for a change that `open` refuses.
    func followSchemaChange(_ db: Database) throws {
        var tables = try TrackedTable.fetchAll(db)
        if try !tables.allSatisfy({ try $0.hasRegisteredShape(in: db) }) {
            // In a transaction of its own, as a migration in the app's: the changes adoption
            // records end their author mark before it commits.
            var summary: MigrationSummary?
            let lost = try CaptureTriggers.lost(tables, in: db)
            try db.inTransaction(.immediate) {
                summary = try perform(Migration(), checkingForeignKeys: false, db)
                try noteLostTriggers(lost, db)
                return .commit
            }
            adoption.withLock { $0 = summary }
            tables = try TrackedTable.fetchAll(db)
        }
        // Tables whose shape did not change may have lost their triggers too (one rebuilt).
        guard try !CaptureTriggers.repairs(tables, in: db).isEmpty else { return }
        try db.inTransaction(.immediate) {
            try repairCaptureTriggersIfSchemaChanged(db)
            return .commit
        }
    }

    /// The tracked tables whose capture triggers were found missing and put back, by `open` or
    /// before a write through this store: another client removed them, or rebuilt the table (which
    /// drops them with it). Writes made to those tables while they were missing were not recorded,
    /// and do not replicate; the next row digest counts the tables again, so that `sync status`
    /// can tell peers whose rows differ. Empty when none.
    public var restoredCaptureTriggers: [String] { restoration.withLock { $0 } }

    /// Puts back the capture triggers another client removed from tracked tables, and makes again
    /// those that read otherwise than this build makes them (an earlier build's). Capture found
    /// paused outside an import (only another client can leave it so) is resumed, and every table
    /// named in `restoredCaptureTriggers`. A store opened read-only cannot, and says nothing:
    /// nothing is written through it either.
    private func restoreCaptureTriggers() throws {
        // Looked at without a lock; a repair looks again in an immediate transaction, where no
        // other process can make the same repair meanwhile.
        let needed = try database.read { db in
            let repairs = try CaptureTriggers.repairs(replicatedTables, in: db)
            let paused = try CaptureTriggers.isPaused(db)
            if repairs.isEmpty && !paused { try noteTriggersChecked(db) }
            return !repairs.isEmpty || paused
        }
        guard needed else { return }
        do {
            try writeImmediately { db in
                if try CaptureTriggers.resume(db) {
                    // Writes went unrecorded meanwhile, without a schema change to say so.
                    try RowDigests.forgetAll(db)
                    let names = trackedTables.map(\.name)
                    db.afterNextTransaction(onCommit: { [restoration] _ in
                        restoration.withLock { restored in restored += names.filter { !restored.contains($0) } }
                    })
                }
                try repairCaptureTriggers(db, checkingShapes: false)
            }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_READONLY {
            return
        }
    }

    /// Before a write through this store, when the schema changed since the capture triggers were
    /// last checked (another client may have removed them while the store was open): repairs them,
    /// so that the write is captured.
    func repairCaptureTriggersIfSchemaChanged(_ db: Database) throws {
        let version = Int(try db.schemaVersion())
        guard triggersChecked.withLock({ $0 != version }) else { return }
        do {
            try repairCaptureTriggers(db, checkingShapes: true)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_READONLY {
            // A store opened read-only: nothing is written through it either.
        }
    }

    /// Makes every tracked table's capture triggers what this build makes, in the transaction `db`
    /// is in. Once it commits, notes the tables one was missing from, and the schema cookie then.
    /// `checkingShapes` leaves alone a table another client changed while the store was open (a
    /// renamed column, say, which SQLite carried into its triggers): the next `open` adopts that
    /// change, and the triggers its registration makes would name columns no longer there.
    private func repairCaptureTriggers(_ db: Database, checkingShapes: Bool) throws {
        let all = try TrackedTable.fetchAll(db)
        let tables = checkingShapes ? try all.filter { try $0.hasRegisteredShape(in: db) } : all
        let changed = tables.count != all.count
        let repairs = try CaptureTriggers.repairs(tables, in: db)
        guard !repairs.isEmpty else {
            if !changed { try noteTriggersChecked(db) }
            return
        }
        for repair in repairs { try CaptureTriggers.apply(repair, in: db) }
        let missing = repairs.filter(\.missing).map(\.table.name)
        let checked = Int(try db.schemaVersion())
        db.afterNextTransaction(onCommit: { [restoration, triggersChecked] _ in
            if !changed { triggersChecked.withLock { $0 = checked } }
            restoration.withLock { names in names += missing.filter { !names.contains($0) } }
        })
    }

    /// Runs `body` with capture paused, so that what it writes (an import's merge) is not
    /// captured (`CaptureTriggers.paused`). A trigger another client removed since they were last
    /// checked is repaired first, as before a write, so that `restoredCaptureTriggers` names its
    /// table and the writes after the import are captured.
    ///
    /// Paused, the capture triggers still run on every statement that writes a tracked table, to
    /// find that they are paused: a trigger program per statement, and a statement journal SQLite
    /// keeps for a statement with triggers. `turningTriggersOff` (a large import): where the main
    /// schema holds no other trigger, the connection's are turned off too, which expires its
    /// prepared statements; not on an app's connection, whose statements those are.
    func withCapturePaused<T>(in db: Database, turningTriggersOff: Bool = false, _ body: () throws -> T) throws -> T {
        try repairCaptureTriggersIfSchemaChanged(db)
        guard try turningTriggersOff && attachedWriter == nil && !MainSchemaTriggers.appTriggersExist(db) else {
            return try CaptureTriggers.paused(replicatedTables, in: db, body)
        }
        return try CaptureTriggers.paused(replicatedTables, in: db) { try MainSchemaTriggers.off(db, body) }
    }

    /// Notes that the capture triggers are as this build makes them at the current schema cookie.
    private func noteTriggersChecked(_ db: Database) throws {
        let version = Int(try db.schemaVersion())
        triggersChecked.withLock { $0 = version }
    }

    /// The registration of a tracked table by name.
    public func trackedTable(named name: String) -> TrackedTable? { trackedTables.first { $0.name == name } }

    // MARK: - Token and status

    /// The store's current token: every transaction it holds or has held.
    public func currentToken() throws -> History.Token {
        try sealForeignWritesBeforeReading()
        return try database.read { db in try Self.currentToken(db) }
    }

    /// How far history has been deleted, per origin: fetching or exporting after a token that
    /// does not cover this fails with `historyTokenExpired`.
    public func prunedToken() throws -> History.Token {
        try database.read { db in
            var sequences: [Replica.ID: Int64] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT replica, pruned_through FROM tidemark_replicas WHERE pruned_through > 0")
            {
                if let id = Replica.ID(bytes: [UInt8](row[0] as Data)) { sequences[id] = row[1] }
            }
            return History.Token(sequences: sequences)
        }
    }

    static func currentToken(_ db: Database) throws -> History.Token {
        var sequences: [Replica.ID: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT replica, max_seq FROM tidemark_replicas") {
            if let id = Replica.ID(bytes: [UInt8](row[0] as Data)) { sequences[id] = row[1] }
        }
        return History.Token(sequences: sequences)
    }

    // MARK: - Write transactions

    /// Runs `body` in one write transaction begun IMMEDIATE (the write lock is taken before any
    /// work, so a busy store fails fast), committed when `body` returns, rolled back when it throws.
    func writeImmediately<T>(_ body: (Database) throws -> T) throws -> T {
        try database.writeWithoutTransaction { db in
            var result: T?
            try db.inTransaction(.immediate) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    // MARK: - Errors

    /// Runs `body`, turning any database error into a `StoreError` that names this store's file.
    func mappingErrors<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as StoreError { throw error } catch {
            throw StoreConnection.mapped(error, path: path)
        }
    }
}
