import GRDB

/// Keeps a migration's code (`Store.Migration.body`) off Tidemark's own objects, as the text of
/// a SQL migration is checked statement by statement: code runs statements Tidemark does not see.
///
/// While the code runs, temporary triggers refuse every write to a `tidemark_` table that capture
/// does not make (a capture trigger inserts into `tidemark_changes`, and an app's writer records
/// authors in `tidemark_authorship`); after it, Tidemark's objects are compared with what they
/// were: one dropped, changed or added is refused. Capture triggers are left out: SQLite rewrites
/// them when a tracked table or column is renamed, drops them with a table rebuilt, and what the
/// migration writes is not history anyway (every replica runs the same migration).
struct BookkeepingGuard {
    private let db: Database
    /// Tidemark's objects before the code ran, capture triggers left out.
    private let before: [String: String]
    /// The names of the tracked tables' capture triggers.
    private let captureTriggers: Set<String>
    /// The temporary triggers installed.
    private let guards: [String]

    /// What a guard's refusal says, followed by the table's name.
    private static let refusal = "Tidemark's bookkeeping table is not the migration's to write: "

    /// Notes Tidemark's objects and installs the guards, before the migration's code runs.
    init(_ db: Database, tracked: [TrackedTable]) throws {
        self.db = db
        captureTriggers = Set(tracked.flatMap(CaptureTriggers.names(for:)))
        before = try SchemaWatch.objects(db).filter { [captureTriggers] in !captureTriggers.contains($0.key) }
        let tables = try String.fetchAll(
            db,
            sql: "SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name LIKE 'tidemark\\_%' ESCAPE '\\'")
        var guards: [String] = []
        for (i, table) in tables.enumerated() {
            // What capture itself writes while the code writes tracked tables.
            let allowed: Set<String> =
                switch table {
                case "tidemark_changes": ["INSERT"]
                case "tidemark_authorship": ["INSERT", "UPDATE"]
                case let name where name.hasPrefix("tidemark_displaced_"): ["INSERT", "DELETE"]
                default: []
                }
            for operation in ["INSERT", "UPDATE", "DELETE"] where !allowed.contains(operation) {
                let trigger = "\(Bookkeeping.prefix)guard_\(i)_\(operation.lowercased())"
                let message = (Self.refusal + table).quotedLiteral
                try db.execute(
                    sql: """
                        CREATE TEMP TRIGGER \(trigger) BEFORE \(operation) ON main.\(table.quotedIdentifier)
                        BEGIN SELECT RAISE(ABORT, \(message)); END
                        """)
                guards.append(trigger)
            }
        }
        self.guards = guards
    }

    /// The table named by a guard's refusal, when `error` is one.
    static func table(refusedBy error: DatabaseError) -> String? {
        guard let message = error.message, message.hasPrefix(refusal) else { return nil }
        return String(message.dropFirst(refusal.count))
    }

    /// Removes the guards and refuses what the code changed of Tidemark's objects, naming it.
    func finish() throws {
        for trigger in guards { try db.execute(sql: "DROP TRIGGER IF EXISTS temp.\(trigger)") }
        let after = try SchemaWatch.objects(db).filter { !captureTriggers.contains($0.key) }
        if let object = SchemaWatch.firstChanged(before: before, after: after) {
            throw StoreError.bookkeepingChanged(statement: "(the migration's code)", object: object)
        }
    }
}
