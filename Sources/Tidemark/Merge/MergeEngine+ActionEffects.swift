import GRDB
import TidemarkCore

extension MergeEngine {
    /// Records what the app's foreign-key actions changed behind the merge, in rows the merge did
    /// not write after (`ActionEffects`; Protocol/merge.md §5.6): a row removed is settled as a
    /// system delete every replica will see, listed with the values it held; a row changed
    /// returns as an update of the columns the actions changed, for this replica to seal as its
    /// own transaction. Rows no longer alive by their metadata were settled already.
    mutating func settleActionEffects() throws -> [History.Change] {
        var updates: [History.Change] = []
        for (effect, mergedColumns) in effects.unmerged() {
            guard let target = targets[effect.table.name] else { continue }
            let known = try target.metadata.fetch(db, key: effect.key)
            guard known.isAlive else { continue }
            let table = effect.table
            let key = zip(table.keyColumns, effect.key).map { History.Column($0, $1) }
            guard let now = try target.rows.values(key: effect.key) else {
                try resolver.systemDelete(
                    table: table, key: effect.key, values: effect.before, kind: .removed,
                    detail:
                        "the row was removed by a foreign-key action when a merged change removed or changed the row it references"
                )
                continue
            }
            let changed = table.columns.indices.filter {
                !table.keyIndexes.contains($0) && !mergedColumns.contains($0) && now[$0] != effect.before[$0]
            }
            guard !changed.isEmpty else { continue }
            updates.append(
                History.Change(
                    type: .update, table: table.name, key: key,
                    values: changed.map { History.Column(table.columns[$0], now[$0]) }, generation: known.generation))
        }
        return updates
    }

    /// Deletes row `key` of `target`. Where that breaks a constraint, the app's foreign-key
    /// actions on its children did (`SET NULL` into a NOT NULL column, say: the delete itself
    /// breaks none): those children are settled first (`settleActionClashes`), and the row
    /// deleted again (merge.md §5.6).
    mutating func deleteSettlingActions(key: [SQLValue], in target: Target, clock: MergeClock?) throws {
        try ConflictResolver.deleteSettling(target.rows.delete(key: key)) { error in
            guard let values = try target.rows.values(key: key) else { return false }
            return try settleActionClashes(
                of: target.table, key: key, before: values, after: nil, clock: clock, error: error)
        }
    }

    /// Settles what the app's foreign-key actions broke when a merged write of row `key` of
    /// `table` failed with `error` (`ConflictResolver.settleActionClashes`), once the batch of
    /// new rows is written. Returns whether any row was settled: the caller writes again.
    mutating func settleActionClashes(
        of table: TrackedTable, key: [SQLValue], before: [SQLValue], after: [SQLValue]?, clock: MergeClock?,
        error: DatabaseError
    ) throws -> Bool {
        try flushNewRows()
        return try resolver.settleActionClashes(
            of: table, key: key, before: before, after: after, clock: clock, error: error)
    }
}
