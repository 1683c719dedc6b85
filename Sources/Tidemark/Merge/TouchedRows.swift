import TidemarkCore

/// The rows of tracked tables that a merge wrote or removed, by table, so that the orphans it may
/// have left are looked for among those rows and their children (Protocol/merge.md §5.3) instead
/// of in every row of every table with a foreign key, at every import. Keys are noted for the
/// tables a foreign key names; of the others, only that rows were written. Past `limit` rows of a
/// table the table counts as touched whole, and a table a foreign-key action or an app's trigger
/// may have changed is taken whole by `ForeignKeys`. Nothing is noted in a store with no foreign
/// key between tracked tables.
final class TouchedRows {
    /// Rows of one table noted one by one, past which the table counts whole: looking for the
    /// orphans of that many rows by key costs about as much as a scan of the table.
    static let limit = 4096

    /// The lowercased names of the tables noted: those a foreign key names, as child or parent.
    private let watched: Set<String>
    /// The keys noted since the last `take`, by lowercased table name.
    private var keys: [String: Set<[SQLValue]>] = [:]
    /// Tables noted whole since the last `take`, by lowercased name.
    private var whole: Set<String> = []
    /// Tables no foreign key names with rows written since the last `take`, by lowercased name: an
    /// app's trigger on one may change a table that one names.
    private var others: Set<String> = []
    /// The table of `others` noted last, so that a run of rows of one table is noted once.
    private var lastOther: String?
    /// Tables, watched or not, with rows removed or updated since the last `take`, by lowercased
    /// name: a foreign key's action follows those changes, never an insert of a new row.
    private var existing: Set<String> = []
    /// The table of `existing` noted last.
    private var lastExisting: String?

    init(watching tables: Set<String>) {
        watched = tables
    }

    /// Notes that the row `key` of `table` was written or removed: one it held (`existing`:
    /// removed, updated, or perhaps either), or a new one.
    func note(_ table: TrackedTable, key: [SQLValue], existing changed: Bool) {
        guard !watched.isEmpty else { return }
        if changed, lastExisting != table.name {
            existing.insert(table.name.lowercased())
            lastExisting = table.name
        }
        guard lastOther != table.name else { return }
        let name = table.name.lowercased()
        guard watched.contains(name) else {
            others.insert(name)
            lastOther = table.name
            return
        }
        guard !whole.contains(name) else { return }
        if keys[name, default: []].insert(key).inserted, keys[name]!.count > Self.limit {
            keys[name] = nil
            whole.insert(name)
        }
    }

    /// Notes the rows `values` holds (`count` rows of every column, in column order) as written.
    func note(_ table: TrackedTable, rows values: [SQLValue], count: Int) {
        guard !watched.isEmpty, count > 0 else { return }
        let width = table.columns.count
        for row in 0..<count { note(table, key: table.keyIndexes.map { values[row * width + $0] }, existing: false) }
    }

    /// What was noted since the last call, and forgets it: the keys by table, the tables whole,
    /// the tables no foreign key names, and the tables with rows removed or updated.
    func take() -> (keys: [String: Set<[SQLValue]>], whole: Set<String>, others: Set<String>, existing: Set<String>) {
        defer {
            keys = [:]
            whole = []
            others = []
            lastOther = nil
            existing = []
            lastExisting = nil
        }
        return (keys, whole, others, existing)
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension TouchedRows: Sendable {}
