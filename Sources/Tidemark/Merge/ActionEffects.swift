import GRDB
import TidemarkCore

/// The rows of tracked tables that the app's foreign-key actions (`ON DELETE CASCADE`, `SET NULL`,
/// `SET DEFAULT`, `ON UPDATE CASCADE`) change while an import merges their parent rows, caught
/// through the pre-update hook around each merged delete or update of a parent table (Protocol/
/// merge.md §5.6). Where the merge goes on to write the same row (the writer's transaction carried
/// the same effect) the merge decides it; the rest, rows the writer never saw, are recorded as
/// this replica's own writes, so that every replica ends with them.
///
/// Nothing is caught on an app's connection (which may have a pre-update hook of its own, see
/// `PreUpdateRow`) or where the linked SQLite lacks the hook.
final class ActionEffects {
    /// A row of a tracked table.
    struct Row: Hashable {
        let table: String
        let key: [SQLValue]
    }

    /// What the actions did to one row: its values before the first, in column order.
    struct Effect {
        let table: TrackedTable
        let key: [SQLValue]
        let before: [SQLValue]
    }

    /// The connection, where actions can be watched on it.
    let connection: OpaquePointer?
    /// The tracked tables an action may change, by lowercased name, with where the pre-update
    /// hook finds their columns.
    let children: [String: (table: TrackedTable, layout: PreUpdateLayout)]
    /// The tables (lowercased) whose deletes and updates may set an action off.
    private let parents: Set<String>
    /// The rows changed so far.
    private var changed: Set<Row> = []
    /// What the actions did, in the order the rows were first changed.
    private(set) var effects: [Effect] = []
    /// Per changed row, the columns (by index) the merge wrote after the first change.
    private var mergedColumns: [Row: Set<Int>] = [:]
    /// The changed rows the merge then deleted, or started a new life of: the merge's.
    private var mergedWhole: Set<Row> = []

    /// `actionParents` is what `RowDigests.foreignKeyActionParents` read; `ownConnection` whether
    /// the connection is one Tidemark opened.
    init(db: Database, tables: [TrackedTable], actionParents: [String: Set<String>], ownConnection: Bool) throws {
        let watched = tables.filter { actionParents[$0.name.lowercased()] != nil }
        connection = ownConnection && !watched.isEmpty ? Self.hookConnection(db) : nil
        var children: [String: (TrackedTable, PreUpdateLayout)] = [:]
        if connection != nil {
            for table in watched { children[table.name.lowercased()] = (table, try PreUpdateLayout.of(table, in: db)) }
        }
        self.children = children
        parents = actionParents.values.reduce(into: Set<String>()) { $0.formUnion($1) }
    }

    /// Whether a delete or update of `table` is watched for the actions it sets off.
    func watches(_ table: TrackedTable) -> Bool { connection != nil && parents.contains(table.name.lowercased()) }

    /// Whether an action changed any row so far.
    var changedAny: Bool { !changed.isEmpty }

    /// Notes that the merge wrote `columns` (by index; nil for the whole row: a delete, or a new
    /// life) of row `key` of `table`.
    func noteMerged(_ table: TrackedTable, key: [SQLValue], columns: [Int]?) {
        guard !changed.isEmpty else { return }
        let row = Row(table: table.name, key: key)
        guard changed.contains(row) else { return }
        if let columns { mergedColumns[row, default: []].formUnion(columns) } else { mergedWhole.insert(row) }
    }

    /// The effects the merge did not write over, each with the columns (by index) the merge
    /// wrote after it, which are the merge's.
    func unmerged() -> [(effect: Effect, mergedColumns: Set<Int>)] {
        effects.compactMap { effect in
            let row = Row(table: effect.table.name, key: effect.key)
            return mergedWhole.contains(row) ? nil : (effect, mergedColumns[row] ?? [])
        }
    }

    /// Notes that an action is about to change (delete, or update without changing its key) a
    /// row of `table` holding `before` (every column, in order): the first change of each row.
    func note(_ table: TrackedTable, before: [SQLValue]) {
        let key = table.keyIndexes.map { before[$0] }
        let row = Row(table: table.name, key: key)
        guard changed.insert(row).inserted else { return }
        effects.append(Effect(table: table, key: key, before: before))
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension ActionEffects: Sendable {}
