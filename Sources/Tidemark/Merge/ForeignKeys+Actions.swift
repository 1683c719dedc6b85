import GRDB
import TidemarkCore

extension ForeignKeys {
    /// A child row that a foreign-key action changes when its parent row is merged, with a
    /// statement that makes the action's change to that row alone. Run in a savepoint and rolled
    /// back, it tells whether the action breaks one of the child's own constraints.
    struct ActionTrial {
        let child: Orphan
        let sql: String
        let arguments: [SQLValue]
        /// The child's values as the action leaves them (every column, in order), and the
        /// columns it changes.
        let written: [SQLValue]
        let changed: [Int]
    }

    /// The rows of tracked tables that reference the row of `parent` holding `values` (every
    /// column, in order), each with the foreign key's parent name: those a delete of that row
    /// reaches.
    func children(of parent: TrackedTable, values: [SQLValue]) throws -> [Orphan] {
        var found: [Orphan] = []
        for (key, indexes) in keys(referencing: parent) {
            let referenced = indexes.map { values[$0] }
            guard !referenced.contains(.null) else { continue }
            found += try rows(of: key, holding: referenced)
        }
        return found
    }

    /// The rows of tracked tables that the app's actions (`CASCADE`, `SET NULL`, `SET DEFAULT`)
    /// change when the row of `parent` holding `before` (every column, in order) is updated to
    /// `after`, or deleted (`after` nil), each with its trial.
    func actionTrials(of parent: TrackedTable, before: [SQLValue], after: [SQLValue]?) throws -> [ActionTrial] {
        var trials: [ActionTrial] = []
        for (key, indexes) in keys(referencing: parent) {
            let referenced = indexes.map { before[$0] }
            let replacement = after.map { after in indexes.map { after[$0] } }
            guard !referenced.contains(.null), replacement != referenced else { continue }
            let assigned: [SQLValue]
            switch after == nil ? key.onDelete : key.onUpdate {
            case "CASCADE":
                // A cascaded delete changes no value the child's constraints check.
                guard let replacement else { continue }
                assigned = replacement
            case "SET NULL": assigned = key.from.map { _ in .null }
            case "SET DEFAULT": assigned = try key.from.map { try defaultValue(of: $0, in: key.child) }
            default: continue
            }
            let changed = key.from.compactMap { name in
                key.child.columns.firstIndex { $0.lowercased() == name.lowercased() }
            }
            guard changed.count == key.from.count else { continue }
            let settings = key.from.map { "\($0.quotedIdentifier) = ?" }.joined(separator: ", ")
            let row = key.child.keyColumns.map { "\($0.quotedIdentifier) IS ?" }.joined(separator: " AND ")
            let sql = "UPDATE \(key.child.name.quotedIdentifier) SET \(settings) WHERE \(row)"
            trials += try rows(of: key, holding: referenced).map { child in
                var written = child.values
                for (i, value) in zip(changed, assigned) { written[i] = value }
                return ActionTrial(
                    child: child, sql: sql, arguments: assigned + child.key, written: written, changed: changed)
            }
        }
        return trials
    }

    /// The foreign keys whose parent is `parent`, each with the indexes in its columns of the
    /// columns the key references (keys over columns it does not track left out).
    private func keys(referencing parent: TrackedTable) -> [(key: Key, indexes: [Int])] {
        let columns = Dictionary(
            parent.columns.enumerated().map { ($1.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        return keys.compactMap { key in
            guard key.parent.lowercased() == parent.name.lowercased() else { return nil }
            let indexes = key.to.compactMap { columns[$0.lowercased()] }
            return indexes.count == key.to.count ? (key, indexes) : nil
        }
    }

    /// The rows of `key`'s child table whose foreign key holds `values`.
    private func rows(of key: Key, holding values: [SQLValue]) throws -> [Orphan] {
        let match = key.from.map { "\($0.quotedIdentifier) = ?" }.joined(separator: " AND ")
        let list = key.child.columns.map(\.quotedIdentifier).joined(separator: ", ")
        return try RawStatement.rows(
            db, sql: "SELECT \(list) FROM \(key.child.name.quotedIdentifier) WHERE \(match)", arguments: values
        ).map { row in
            Orphan(table: key.child, key: key.child.keyIndexes.map { row[$0] }, values: row, parent: key.parent)
        }
    }

    /// The value `SET DEFAULT` writes into `column` of `table`: its default, evaluated.
    private func defaultValue(of column: String, in table: TrackedTable) throws -> SQLValue {
        guard
            let expression = try String.fetchOne(
                db, sql: "SELECT dflt_value FROM pragma_table_info(?) WHERE name = ? COLLATE NOCASE",
                arguments: [table.name, column])
        else { return .null }
        return try RawStatement.rows(db, sql: "SELECT (\(expression))").first?.first ?? .null
    }
}
