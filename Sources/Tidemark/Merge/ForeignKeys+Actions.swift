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
    }

    /// The rows of tracked tables that the app's actions (`CASCADE`, `SET NULL`, `SET DEFAULT`)
    /// change when the row of `parent` holding `before` (every column, in order) is updated to
    /// `after`, or deleted (`after` nil), each with its trial.
    func actionTrials(of parent: TrackedTable, before: [SQLValue], after: [SQLValue]?) throws -> [ActionTrial] {
        let columns = Dictionary(
            parent.columns.enumerated().map { ($1.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        var trials: [ActionTrial] = []
        for key in keys where key.parent.lowercased() == parent.name.lowercased() {
            let indexes = key.to.compactMap { columns[$0.lowercased()] }
            guard indexes.count == key.to.count else { continue }
            let referenced = indexes.map { before[$0] }
            let replacement = after.map { after in indexes.map { after[$0] } }
            guard !referenced.contains(.null), replacement != referenced else { continue }
            let assigned: [String]
            var arguments: [SQLValue] = []
            switch after == nil ? key.onDelete : key.onUpdate {
            case "CASCADE":
                // A cascaded delete changes no value the child's constraints check.
                guard let replacement else { continue }
                assigned = key.from.map { _ in "?" }
                arguments = replacement
            case "SET NULL": assigned = key.from.map { _ in "NULL" }
            case "SET DEFAULT": assigned = try key.from.map { try defaultExpression(of: $0, in: key.child) }
            default: continue
            }
            let child = key.child.name.quotedIdentifier
            let settings = zip(key.from, assigned).map { "\($0.quotedIdentifier) = \($1)" }.joined(separator: ", ")
            let row = key.child.keyColumns.map { "\($0.quotedIdentifier) IS ?" }.joined(separator: " AND ")
            let sql = "UPDATE \(child) SET \(settings) WHERE \(row)"
            let match = key.from.map { "\($0.quotedIdentifier) = ?" }.joined(separator: " AND ")
            let list = key.child.columns.map(\.quotedIdentifier).joined(separator: ", ")
            for values in try RawStatement.rows(
                db, sql: "SELECT \(list) FROM \(child) WHERE \(match)", arguments: referenced)
            {
                let rowKey = key.child.keyIndexes.map { values[$0] }
                trials.append(
                    ActionTrial(
                        child: Orphan(table: key.child, key: rowKey, values: values, parent: key.parent), sql: sql,
                        arguments: arguments + rowKey))
            }
        }
        return trials
    }

    /// The default of `column` of `table` as an SQL expression: what `SET DEFAULT` writes.
    private func defaultExpression(of column: String, in table: TrackedTable) throws -> String {
        let value = try String.fetchOne(
            db, sql: "SELECT dflt_value FROM pragma_table_info(?) WHERE name = ? COLLATE NOCASE",
            arguments: [table.name, column])
        return value.map { "(\($0))" } ?? "NULL"
    }
}
