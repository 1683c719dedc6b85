import GRDB

/// Adopts the schema changes an app commits on its own writer without `Store.migrate(_:in:)` (a
/// plain `DatabaseMigrator` migration that adds a column, say) as soon as they commit, as `open`
/// would: until then the capture triggers name only the columns registered before, and the app's
/// writes to a new column would reach no peer.
///
/// One per store attached to a writer, registered for as long as the store lives. After each
/// commit on the writer it reads SQLite's schema cookie, a cached statement; only when the cookie
/// moved does it look at the tracked tables.
// @unchecked: the mutable state is read and written only in the writer's dispatch queue, where
// GRDB calls every transaction observer and where `start` sets it.
final class WriterSchemaChanges: TransactionObserver, @unchecked Sendable {
    private weak var store: Store?
    /// The schema cookie after the last change this observer followed.
    private var schemaVersion: Int32 = 0
    /// Set while following, whose own transactions commit on the same writer.
    private var isFollowing = false

    /// Starts following the schema changes committed on `writer` for `store`.
    func start(for store: Store, on writer: any DatabaseWriter) throws {
        try writer.writeWithoutTransaction { db in
            self.store = store
            schemaVersion = try Self.cookie(db)
            db.add(transactionObserver: self, extent: .observerLifetime)
        }
    }

    private static func cookie(_ db: Database) throws -> Int32 {
        try Int32.fetchOne(db.cachedStatement(sql: "PRAGMA main.schema_version")) ?? 0
    }

    // MARK: - TransactionObserver

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }

    func databaseDidChange(with event: DatabaseEvent) {}

    func databaseDidRollback(_ db: Database) {}

    /// Follows a schema change the committed transaction made. A change no migration can be
    /// inferred from is left to the next `open`, which reports it; one that could not be followed
    /// for now (another process holding the write lock, say) is tried again after the next commit.
    func databaseDidCommit(_ db: Database) {
        guard !isFollowing, let store else { return }
        isFollowing = true
        defer { isFollowing = false }
        do {
            let version = try Self.cookie(db)
            guard version != schemaVersion else { return }
            do {
                try store.followSchemaChange(db)
            } catch is StoreError {
                // Not adoptable: reported by the next `open`, not tried again at every commit.
            }
            schemaVersion = try Self.cookie(db)
        } catch {
            // Tried again after the next commit.
        }
    }
}
