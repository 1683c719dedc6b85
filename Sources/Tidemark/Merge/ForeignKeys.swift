import GRDB
import TidemarkCore

/// The foreign keys of tracked tables, and the rows they leave orphaned: rows whose foreign key
/// names a parent row that does not exist (Protocol/merge.md §5.3).
struct ForeignKeys {
    /// One foreign key of a tracked table.
    struct Key {
        let child: TrackedTable
        /// The referenced table's name, as the foreign key spells it.
        let parent: String
        /// The child's columns, and the parent's columns they reference, in the same order.
        let from: [String]
        let to: [String]
        /// Whether an index of the child table begins with `from`, so that the children of one
        /// parent row are found without a scan.
        let indexed: Bool
        /// The actions on the children when a parent row is updated or deleted, as SQLite reports
        /// them (`CASCADE`, `SET NULL`, `SET DEFAULT`, `RESTRICT` or `NO ACTION`).
        let onUpdate: String
        let onDelete: String
    }

    let db: Database
    /// Every foreign key of every tracked table, child tables in registration order.
    let keys: [Key]
    /// The tracked tables by lowercased name.
    private let tracked: [String: TrackedTable]
    /// For every table, tracked or not, the tables whose changes its foreign-key actions follow
    /// (`RowDigests.foreignKeyActionParents`): what changes behind the merge. Read once per import,
    /// for the orphans and the digests.
    let actionParents: [String: Set<String>]

    /// Reads the foreign keys of `tables`.
    init(db: Database, tables: [TrackedTable]) throws {
        self.db = db
        tracked = Dictionary(tables.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        actionParents = try RowDigests.foreignKeyActionParents(db)
        var keys: [Key] = []
        for table in tables.sorted(by: { $0.id < $1.id }) {
            let list = try Row.fetchAll(
                db,
                sql:
                    "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq",
                arguments: [table.name])
            var byID: [Int: (parent: String, from: [String], to: [String?], onUpdate: String, onDelete: String)] = [:]
            for row in list {
                let id: Int = row[0]
                byID[id, default: (row[1], [], [], row[4], row[5])].from.append(row[2])
                byID[id]!.to.append(row[3])
            }
            guard !byID.isEmpty else { continue }
            let indexes = try Self.indexedPrefixes(of: table, in: db)
            for (_, fk) in byID.sorted(by: { $0.key < $1.key }) {
                var to = fk.to.compactMap { $0 }
                if to.count != fk.from.count {
                    // A foreign key that names no columns references the parent's primary key.
                    to = try String.fetchAll(
                        db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk",
                        arguments: [fk.parent])
                }
                guard to.count == fk.from.count else { continue }
                let from = fk.from.map { $0.lowercased() }
                keys.append(
                    Key(
                        child: table, parent: fk.parent, from: fk.from, to: to,
                        indexed: indexes.contains { $0.starts(with: from) }, onUpdate: fk.onUpdate.uppercased(),
                        onDelete: fk.onDelete.uppercased()))
            }
        }
        self.keys = keys
    }

    /// The leading columns of each index of `table` (lowercased), as far as they are columns.
    private static func indexedPrefixes(of table: TrackedTable, in db: Database) throws -> [[String]] {
        try String.fetchAll(db, sql: "SELECT name FROM pragma_index_list(?)", arguments: [table.name]).map {
            let names = try String?.fetchAll(
                db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno", arguments: [$0])
            return Array(names.prefix { $0 != nil }.map { $0!.lowercased() })
        }
    }

    /// The lowercased names of the tables the foreign keys name, as child or parent.
    var tables: Set<String> {
        Set(keys.flatMap { [$0.child.name.lowercased(), $0.parent.lowercased()] })
    }

    /// One row whose foreign key names a parent row that does not exist.
    struct Orphan {
        let table: TrackedTable
        let key: [SQLValue]
        /// Every column's value, by column index.
        let values: [SQLValue]
        /// The table it lacks a row of, as the foreign key spells it.
        let parent: String
    }

    /// The orphans that the rows `touched` took since it was last asked may have left, each row
    /// once. A row a write noted may itself name no parent; a row a write removed may have been
    /// some child's parent. Where a table was noted whole, or changed behind the merge (by a foreign-key
    /// action, or by an app's trigger as `appTriggers` says, `AppTriggers.targets`), every row of
    /// its foreign keys and of its children's is looked at.
    func orphans(after touched: TouchedRows, appTriggers: [String: Set<String>]) throws -> [Orphan] {
        let (keys, noted, others, existing) = touched.take()
        guard !keys.isEmpty || !noted.isEmpty || !others.isEmpty else { return [] }
        // What changed behind the merge: the tables an app's trigger on a changed table may write,
        // and the children with an action of a parent with rows removed or updated (an insert sets
        // none off), and so on.
        let written = Set(keys.keys).union(others)
        var whole = noted
        var grew = true
        while grew {
            let before = whole.count
            whole.formUnion(AppTriggers.reach(from: written.union(whole), targets: appTriggers))
            for (child, parents) in actionParents where !parents.isDisjoint(with: existing.union(whole)) {
                whole.insert(child)
            }
            grew = whole.count > before
        }
        var found: [Orphan] = []
        var seen: [String: Set<[SQLValue]>] = [:]
        for key in self.keys {
            let child = key.child.name.lowercased()
            let parent = key.parent.lowercased()
            let parentKeys = keys[parent] ?? []
            var rows: [[SQLValue]] = []
            let byParentKey = parentKeys.isEmpty ? nil : parentKeyOrder(of: key)
            if whole.contains(child) || whole.contains(parent)
                || (!parentKeys.isEmpty && (byParentKey == nil || !key.indexed))
            {
                rows = try RawStatement.rows(db, sql: query(key, where: nil))
            } else {
                if let childKeys = keys[child], !childKeys.isEmpty {
                    let match = key.child.keyColumns.map { "c.\($0.quotedIdentifier) = ?" }
                    let statement = try RawStatement(db, sql: query(key, where: match.joined(separator: " AND ")))
                    for childKey in childKeys { rows += try statement.rows(binding: childKey) }
                }
                if let order = byParentKey {
                    let match = key.from.map { "c.\($0.quotedIdentifier) = ?" }
                    let statement = try RawStatement(db, sql: query(key, where: match.joined(separator: " AND ")))
                    for parentKey in parentKeys { rows += try statement.rows(binding: order.map { parentKey[$0] }) }
                }
            }
            for values in rows {
                let rowKey = key.child.keyIndexes.map { values[$0] }
                if seen[child, default: []].insert(rowKey).inserted {
                    found.append(Orphan(table: key.child, key: rowKey, values: values, parent: key.parent))
                }
            }
        }
        return found
    }

    /// Where the parent's columns that `key` references are its primary key, for each of them in
    /// order the position of that column in the parent's key: how a removed parent row's key gives
    /// the value its children hold. Nil otherwise (a parent not tracked, a key over other columns).
    private func parentKeyOrder(of key: Key) -> [Int]? {
        guard let parent = tracked[key.parent.lowercased()] else { return nil }
        let keyColumns = parent.keyColumns.map { $0.lowercased() }
        let positions = key.to.compactMap { keyColumns.firstIndex(of: $0.lowercased()) }
        guard positions.count == keyColumns.count, Set(positions).count == keyColumns.count else { return nil }
        return positions
    }

    /// The rows of `key`'s child table that name no parent row, with a condition on the child row
    /// `c` (`where`) or none.
    private func query(_ key: Key, where condition: String?) -> String {
        let notNull = key.from.map { "c.\($0.quotedIdentifier) IS NOT NULL" }.joined(separator: " AND ")
        let match = zip(key.from, key.to).map { "p.\($1.quotedIdentifier) = c.\($0.quotedIdentifier)" }
            .joined(separator: " AND ")
        let columns = key.child.columns.map { "c.\($0.quotedIdentifier)" }.joined(separator: ", ")
        return "SELECT \(columns) FROM \(key.child.name.quotedIdentifier) c WHERE \(notNull)"
            + (condition.map { " AND \($0)" } ?? "")
            + " AND NOT EXISTS (SELECT 1 FROM \(key.parent.quotedIdentifier) p WHERE \(match))"
    }
}
