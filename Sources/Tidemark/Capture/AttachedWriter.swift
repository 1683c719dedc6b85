import GRDB
import TidemarkCore

/// What follows each commit on the app's GRDB writer a store is attached to:
/// - the committed transaction's author mark ends (`WriterAuthorship`);
/// - what it wrote is sealed at once, so each app transaction becomes one history transaction
///   stamped with the time it was written;
/// - a schema change it made without `Store.migrate(_:in:)` (a plain `DatabaseMigrator` migration
///   that adds a column, say) is adopted as `open` would adopt it. Until then the capture triggers
///   name only the columns registered before, and the app's writes to a new column would reach no
///   peer.
///
/// One per writer connection, for as long as the connection lives: it goes on ending marks and
/// sealing after the stores attached to it are gone, and a store attached again shares it. Schema
/// changes are followed while a store attached to it lives. After each commit it runs one cached
/// statement that says whether a mark is open, whether changes are pending and what SQLite's
/// schema cookie is; it writes only when one of them asks for it.
///
/// GRDB tells the observers of this observer's own commits too, and the app may write from there
/// (an `afterNextTransaction` closure, a `DatabaseRegionObservation`'s `onChange`): each such write
/// is a transaction of its own, whose mark ends as it commits, and which the work in progress
/// seals once it is done.
// @unchecked: the mutable state is read and written only in the writer's dispatch queue, where
// GRDB calls every transaction observer and where `attach` sets it.
final class AttachedWriter: TransactionObserver, @unchecked Sendable {
    /// The replica and clock of the store attached last: a store made again on the same
    /// connection (after the app erased the database, say) is another replica.
    private var replica: Replica.ID
    private var clock: any WallClock
    /// The stores attached through this connection; the first one alive follows schema changes.
    private var stores: [WeakStore] = []
    /// The schema cookie after the last schema change this observer followed.
    private var schemaVersion: Int64 = 0
    /// Set while this observer works after a commit: the commits it makes, and those the app makes
    /// from their callbacks, only end their marks and ask for another pass.
    private var isWorking = false
    private var worksAgain = false

    private init(replica: Replica.ID, clock: any WallClock) {
        self.replica = replica
        self.clock = clock
    }

    private struct WeakStore {
        weak var store: Store?
    }

    /// The observer of each writer connection, found again when a store attaches to it once more.
    private struct Registration {
        weak var connection: Database?
        weak var observer: AttachedWriter?
    }
    private static let registrations = Locked<[ObjectIdentifier: Registration]>([:])

    /// Returns the observer of `writer`'s connection, installing it and the connection's
    /// authorship objects (`WriterAuthorship`) the first time a store attaches to it.
    static func attach(to writer: any DatabaseWriter, replica: Replica.ID, options: Store.Options) throws
        -> AttachedWriter
    {
        try writer.writeWithoutTransaction { db in
            let observer = registrations.withLock { registrations in
                registrations = registrations.filter { $0.value.connection != nil && $0.value.observer != nil }
                return registrations[ObjectIdentifier(db)].flatMap { $0.connection === db ? $0.observer : nil }
            }
            if let observer {
                observer.replica = replica
                observer.clock = options.clock
                return observer
            }
            try WriterAuthorship.install(in: db)
            let new = AttachedWriter(replica: replica, clock: options.clock)
            new.schemaVersion = try state(db).schemaVersion
            db.add(transactionObserver: new, extent: .databaseLifetime)
            registrations.withLock { $0[ObjectIdentifier(db)] = Registration(connection: db, observer: new) }
            return new
        }
    }

    /// Follows the schema changes committed on `writer` for `store` too.
    func follow(for store: Store, on writer: any DatabaseWriter) throws {
        try writer.writeWithoutTransaction { db in
            stores = stores.filter { $0.store != nil } + [WeakStore(store: store)]
            schemaVersion = try Self.state(db).schemaVersion
        }
    }

    /// What a commit left to do.
    private struct State {
        var marked: Bool
        var pending: Bool
        var schemaVersion: Int64
    }

    /// Runs after every commit on the writer: prepared once.
    private static func state(_ db: Database) throws -> State {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT \(markedSQL),
                           coalesce((SELECT max(id) FROM main.tidemark_changes)
                             > (SELECT sealed_through FROM main.tidemark_state WHERE id = 1), 0),
                           (SELECT schema_version FROM pragma_schema_version)
                    """))!
        return State(marked: row[0], pending: row[1], schemaVersion: row[2])
    }

    /// Whether the committed transaction left a mark or an author open: the temporary tables
    /// alone, which no other process locks.
    private static func isMarked(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT \(markedSQL)")) ?? false
    }

    /// Whether a mark or the current transaction's author is open, in SQL.
    private static let markedSQL =
        "(EXISTS (SELECT 1 FROM temp.tidemark_open) OR EXISTS (SELECT 1 FROM temp.tidemark_author WHERE scope = 1))"

    // MARK: - TransactionObserver

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }

    func databaseDidChange(with event: DatabaseEvent) {}

    func databaseDidRollback(_ db: Database) {}

    func databaseDidCommit(_ db: Database) {
        guard var state = try? Self.state(db) else {
            // The main database could not be read (another process committing, in a rollback
            // journal): the mark still ends, from the temporary tables alone, and the changes are
            // sealed after the next commit, or by the next seal of any process.
            if (try? Self.isMarked(db)) == true { endTransaction(db) }
            return
        }
        guard !isWorking else {
            if state.marked { endTransaction(db) }
            if state.pending || state.schemaVersion != schemaVersion { worksAgain = true }
            return
        }
        isWorking = true
        defer { isWorking = false }
        // Bounded: an app that writes from every commit's callback is sealed by its next commit.
        for _ in 0..<8 {
            worksAgain = false
            if state.pending {
                seal(db, endingMark: state.marked)
            } else if state.marked {
                endTransaction(db)
            }
            if state.schemaVersion != schemaVersion { followSchemaChange(db) }
            guard worksAgain, let next = try? Self.state(db) else { return }
            state = next
        }
    }

    /// Seals what is pending, ending the committed transaction's mark in the same transaction. A
    /// failure (another process holding the write lock, say) only delays the seal: the marks keep
    /// the authorship until the next seal by any process.
    private func seal(_ db: Database, endingMark: Bool) {
        do {
            try db.inTransaction(.immediate) {
                if endingMark { try WriterAuthorship.endTransaction(in: db) }
                _ = try Sealer.sealPending(db, replica: replica, clock: clock)
                return .commit
            }
        } catch {
            if endingMark { endTransaction(db) }
        }
    }

    /// Ends the committed transaction's mark and author: the next transaction's changes start
    /// their own. Writes only the connection's temporary tables.
    private func endTransaction(_ db: Database) {
        // A failure leaves the mark open until the next commit, which ends it.
        try? db.inTransaction(.deferred) {
            try WriterAuthorship.endTransaction(in: db)
            return .commit
        }
    }

    /// Follows a schema change a committed transaction made. A change no migration can be inferred
    /// from is left to the next `open`, which reports it; one that could not be followed for now
    /// (another process holding the write lock, say) is tried again after the next commit.
    private func followSchemaChange(_ db: Database) {
        guard let store = stores.lazy.compactMap(\.store).first else { return }
        do {
            do {
                try store.followSchemaChange(db)
            } catch is StoreError {
                // Not adoptable: reported by the next `open`, not tried again at every commit.
            }
            schemaVersion = try Self.state(db).schemaVersion
        } catch {
            // Tried again after the next commit.
        }
    }
}
