import Foundation
import GRDB
import TidemarkCore

/// Settles constraint clashes that merged state can cause although every replica's own writes were
/// valid (Protocol/merge.md §5). Every resolution is a *system delete*: an ordinary, replicated
/// delete of the losing row by this replica, under author `tidemark` and context `conflict`, whose
/// tombstone carries all the row's values, and which is listed in `tidemark_conflicts`. The rules
/// pick the same loser on every replica, so replicas that resolve the same clash converge.
struct ConflictResolver {
    /// What the caller does next.
    enum Outcome {
        /// The obstacle was removed: write again.
        case retry
        /// The write was discarded.
        case settled
    }

    /// Why a row was deleted.
    enum Kind: String {
        case unique
        case foreignKey = "foreign_key"
        case check
        case notNull = "not_null"
        case removed, remote, deleted
    }

    /// How many times a delete is tried again after settling what its foreign-key actions broke:
    /// each round system-deletes at least one row, and a chain of actions deeper than this is
    /// left to fail with SQLite's error.
    static let maxSettlingRounds = 64

    let db: Database
    let replica: Replica.ID
    let tables: [String: TrackedTable]
    let metadata: [String: RowMetadataStore]
    /// The foreign keys of the tracked tables, and the rows the merge touched, where orphans are
    /// looked for.
    let foreignKeys: ForeignKeys
    let touched: TouchedRows
    /// Told of each system delete: a foreign-key action may follow it.
    let digests: RowDigests
    /// The timestamp a resolution is stamped with (detected at).
    let now: () -> HLCTimestamp
    /// System deletes made so far, to be sealed as one transaction of this replica.
    private(set) var deletes: [History.Change] = []
    /// Where what the app's foreign-key actions change as a system delete removes a parent row is
    /// noted (merge.md §5.6): the delete's effects are recorded as a merge's are; nil outside a merge.
    var effects: ActionEffects?

    init(
        db: Database, replica: Replica.ID, tables: [String: TrackedTable], metadata: [String: RowMetadataStore],
        foreignKeys: ForeignKeys, touched: TouchedRows, digests: RowDigests, now: @escaping () -> HLCTimestamp
    ) {
        self.db = db
        self.replica = replica
        self.tables = tables
        self.metadata = metadata
        self.foreignKeys = foreignKeys
        self.touched = touched
        self.digests = digests
        self.now = now
    }

    /// Settles a constraint error raised writing `candidate` (all columns, by index) to row `key`.
    mutating func resolve(
        _ error: DatabaseError, table: TrackedTable, key: [SQLValue], candidate: [SQLValue], metadata known: RowMetadata
    ) throws
        -> Outcome
    {
        switch error.extendedResultCode {
        case .SQLITE_CONSTRAINT_UNIQUE:
            if let (otherKey, columns) = try clashingRow(table: table, key: key, candidate: candidate) {
                let other = try metadata[table.name]!.fetch(db, key: otherKey)
                let candidateLoses = Self.loses(
                    key, written: columns.compactMap { known.clocks[$0] }.max(), to: otherKey,
                    written: columns.compactMap { other.clocks[$0] }.max())
                let names = columns.map { table.columns[$0] }.joined(separator: ", ")
                if candidateLoses {
                    try systemDelete(
                        table: table, key: key, values: candidate, kind: .unique,
                        detail: "(\(names)) already taken by row \(keyJSON(table, otherKey)), written earlier")
                    return .settled
                }
                let values = try RowAccess(db: db, table: table).values(key: otherKey) ?? candidate
                try systemDelete(
                    table: table, key: otherKey, values: values, kind: .unique,
                    detail: "(\(names)) also claimed by row \(keyJSON(table, key)), written earlier")
                return .retry
            }
            try systemDelete(
                table: table, key: key, values: candidate, kind: .unique,
                detail: error.message ?? "UNIQUE constraint failed")
            return .settled
        case .SQLITE_CONSTRAINT_NOTNULL:
            try systemDelete(
                table: table, key: key, values: candidate, kind: .notNull,
                detail: error.message ?? "NOT NULL constraint failed")
            return .settled
        case .SQLITE_CONSTRAINT_CHECK:
            try systemDelete(
                table: table, key: key, values: candidate, kind: .check,
                detail: error.message ?? "CHECK constraint failed")
            return .settled
        default:
            try systemDelete(
                table: table, key: key, values: candidate, kind: .check, detail: error.message ?? "constraint failed")
            return .settled
        }
    }

    /// Runs `delete` until it goes through: where it fails on a constraint, which an app's
    /// foreign-key action broke, `settle` settles the children that action reached and says
    /// whether it settled any. A child settled can let the delete reach further (a cascade into a
    /// grandchild's constraint), so it goes on while rounds settle something, at most
    /// `maxSettlingRounds`; otherwise SQLite's error is thrown.
    static func deleteSettling(
        _ delete: @autoclosure () throws -> Void, settle: (DatabaseError) throws -> Bool
    ) throws {
        for _ in 0...maxSettlingRounds {
            do {
                return try delete()
            } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
                guard try settle(error) else { throw error }
            }
        }
        try delete()
    }

    /// Whether the row `key`, whose values in a UNIQUE index were written at `clock`, loses that
    /// index to the row `otherKey`, written at `otherClock` (merge.md §5.1): the one written later
    /// loses; if the clocks are equal or unknown, the one whose key orders after.
    static func loses(
        _ key: [SQLValue], written clock: MergeClock?, to otherKey: [SQLValue], written otherClock: MergeClock?
    ) -> Bool {
        if let clock, let otherClock, clock != otherClock { return clock > otherClock }
        return KeyOrder.precedes(otherKey, key)
    }

    /// Finds another row holding the candidate's values in one of the table's UNIQUE indexes.
    func clashingRow(table: TrackedTable, key: [SQLValue], candidate: [SQLValue]) throws -> ([SQLValue], [Int])? {
        let quoted = table.name.quotedIdentifier
        for index in try String.fetchAll(
            db, sql: "SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1 AND origin <> 'pk'",
            arguments: [table.name])
        {
            let names = try String?.fetchAll(
                db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [index])
            let columns = names.compactMap { $0.flatMap(table.index(of:)) }
            guard columns.count == names.count, !columns.contains(where: { candidate[$0] == .null }) else { continue }
            let match = columns.map { "\(table.columns[$0].quotedIdentifier) = ?" }.joined(separator: " AND ")
            let notSelf =
                "NOT (" + table.keyColumns.map { "\($0.quotedIdentifier) IS ?" }.joined(separator: " AND ")
                + ")"
            let keys = table.keyColumns.map(\.quotedIdentifier).joined(separator: ", ")
            if let row = try RawStatement.rows(
                db, sql: "SELECT \(keys) FROM \(quoted) WHERE \(match) AND \(notSelf) LIMIT 1",
                arguments: columns.map { candidate[$0] } + key
            ).first {
                return (row, columns)
            }
        }
        return nil
    }

    /// Deletes row `key` as this replica, with all its values in the tombstone, and records why.
    mutating func systemDelete(table: TrackedTable, key: [SQLValue], values: [SQLValue], kind: Kind, detail: String)
        throws
    {
        let rows = RowAccess(db: db, table: table)
        rows.touched = touched
        rows.effects = effects
        // An action of the app's on the row's children may break one of theirs (merge.md §5.6).
        try Self.deleteSettling(rows.delete(key: key)) { error in
            guard let current = try rows.values(key: key) else { return false }
            return try settleActionClashes(of: table, key: key, before: current, after: nil, clock: nil, error: error)
        }
        digests.noteMerged(table)
        let store = metadata[table.name]!
        var known = try store.fetch(db, key: key)
        let generation = known.afterDelete
        known.startLife(generation)
        known.rowHash = nil
        try store.save(db, key: key, &known)
        let tombstone = table.columns.indices.map { History.Column(table.columns[$0], values[$0]) }
        let change = History.Change(
            type: .delete, table: table.name, key: zip(table.keyColumns, key).map { History.Column($0, $1) },
            values: [],
            tombstone: tombstone, generation: generation)
        deletes.append(change)
        try record(change, kind: kind, detail: detail, origin: replica)
    }

    /// Lists a system delete in `tidemark_conflicts` (once per row life).
    func record(_ change: History.Change, kind: Kind, detail: String, origin: Replica.ID) throws {
        let keyNames = Set(change.key.map(\.name))
        var row = (change.tombstone ?? []).filter { !keyNames.contains($0.name) }
        // Another replica's resolution deleting a row held here lists the row as it was here,
        // what this replica loses: the resolver's tombstone holds the row as it knew it. Only the
        // life it ends: a later one held here stays, and is not what the resolution discarded.
        if kind == .remote, let table = tables[change.table],
            case let key = table.keyColumns.map({ name in change.key.first { $0.name == name }?.value ?? .null }),
            try metadata[table.name]?.fetch(db, key: key).generation == change.generation - 1,
            let values = try RowAccess(db: db, table: table).values(key: key)
        {
            row = table.columns.indices.filter { !table.keyIndexes.contains($0) }.map {
                History.Column(table.columns[$0], values[$0])
            }
        }
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO tidemark_conflicts(table_name, key, generation, kind, detail, row, detected, origin)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                change.table, JSONText.object(change.key.map { ($0.name, $0.value) }), change.generation, kind.rawValue,
                detail,
                JSONText.object(row.map { ($0.name, $0.value) }), now().packed, Data(origin.bytes),
            ])
    }

    /// Lists `change`, a discarded edit of a row life, as `record` does; where that life is listed
    /// already as discarded edits of `origin` (an earlier change of the same member), sets the
    /// values this one carries over those listed, so that the listing ends with the member's last.
    func recordMerging(_ change: History.Change, detail: String, origin: Replica.ID) throws {
        try record(change, kind: .deleted, detail: detail, origin: origin)
        guard db.changesCount == 0 else { return }
        let keyNames = Set(change.key.map(\.name))
        // A name with a double quote cannot be spelled in a JSON path: it stays as first listed.
        let values = (change.tombstone ?? []).filter { !keyNames.contains($0.name) && !$0.name.contains("\"") }
        guard !values.isEmpty else { return }
        let paths = values.map { _ in "?, json(?)" }.joined(separator: ", ")
        var arguments: [SQLValue] = []
        for column in values {
            arguments.append(.text("$.\"\(column.name)\""))
            arguments.append(.text(column.value.jsonFragment))
        }
        arguments += [
            .text(change.table), .text(JSONText.object(change.key.map { ($0.name, $0.value) })),
            .integer(change.generation), .blob(Array(origin.bytes)),
        ]
        try RawStatement(
            db,
            sql: """
                UPDATE tidemark_conflicts SET row = json_set(row, \(paths))
                WHERE table_name = ? AND key = ? AND generation = ? AND kind = 'deleted' AND origin = ?
                """
        ).execute(binding: arguments)
    }

    /// Gives the values listed for `table` (by its current name) the new names of its columns a
    /// migration renamed (`renamed`: old name to new), all at once (two columns may swap names),
    /// each listing keeping its order: an application repairs with the names its schema has now.
    /// A value listed under a new name that no column is renamed from (a column dropped before,
    /// whose name a rename now gives another) is listed as `NAME (dropped)`, so that no name
    /// repeats.
    static func renameColumns(_ renamed: [String: String], ofTable table: String, in db: Database) throws {
        guard !renamed.isEmpty else { return }
        let taken = Set(renamed.values).subtracting(renamed.keys).sorted()
        let cases = (renamed.keys.sorted() + taken).map { _ in "WHEN ? THEN ?" }.joined(separator: " ")
        let names = renamed.keys.sorted().flatMap { [$0, renamed[$0]!] } + taken.flatMap { [$0, "\($0) (dropped)"] }
        try db.execute(
            sql: """
                UPDATE tidemark_conflicts SET row = (
                    SELECT json_group_object(
                        CASE key \(cases) ELSE key END,
                        CASE WHEN type = 'object' THEN json(value) ELSE value END)
                    FROM (SELECT key, value, type FROM json_each(tidemark_conflicts.row) ORDER BY id))
                WHERE table_name = ? AND row <> '{}'
                """,
            arguments: StatementArguments(names + [table]))
    }

    /// Deletes rows of tracked tables whose parent row is gone (an orphaned child follows its
    /// parent's delete), repeating until none is left. Looks only where the merge, and the deletes
    /// before, wrote or removed rows (`ForeignKeys.orphans`); `appTriggers` is what
    /// `AppTriggers.targets` read.
    mutating func settleOrphans(appTriggers: [String: Set<String>]) throws {
        // Each pass finds the children of the rows the pass before deleted, one level of a chain
        // at a time, and ends: every orphan it finds is deleted, and only rows written or removed
        // since are looked at again.
        while true {
            let orphans = try foreignKeys.orphans(after: touched, appTriggers: appTriggers)
            guard !orphans.isEmpty else { return }
            for orphan in orphans {
                try systemDelete(
                    table: orphan.table, key: orphan.key, values: orphan.values, kind: .foreignKey,
                    detail:
                        "the row of '\(orphan.parent)' it references is gone: deleted, or its referenced value changed")
            }
        }
    }

    private func keyJSON(_ table: TrackedTable, _ key: [SQLValue]) -> String {
        JSONText.object(zip(table.keyColumns, key).map { ($0, $1) })
    }
}
