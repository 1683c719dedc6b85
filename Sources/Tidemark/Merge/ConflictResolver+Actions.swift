import GRDB
import TidemarkCore

extension ConflictResolver {
    /// Where a write of row `key` of `table` (holding `before`, every column in order) as `after`
    /// (nil for a delete; a merge's, or a system delete's) failed with `error`, settles the
    /// children whose foreign-key action breaks one of their own constraints: each action is tried
    /// on its child alone and rolled back, and each child it fails on is system-deleted, listed
    /// with the error (merge.md §5.6). A child whose new values another row holds in a UNIQUE
    /// index is settled with that row by §5.1 (`loses`), the action writing at `clock` (the merged
    /// write's; nil for a system delete, whose action loses such a clash), as where the writer's
    /// transaction carried the action. For a delete, which itself breaks nothing, every child
    /// reached is when no one alone fails. Returns whether any row was settled: the caller writes
    /// again.
    mutating func settleActionClashes(
        of table: TrackedTable, key: [SQLValue], before: [SQLValue], after: [SQLValue]?, clock: MergeClock?,
        error: DatabaseError
    ) throws -> Bool {
        let message = error.message ?? "\(error)"
        var clashes: [(child: ForeignKeys.Orphan, message: String)] = []
        var losers: [(table: TrackedTable, key: [SQLValue], detail: String)] = []
        for trial in try foreignKeys.actionTrials(of: table, before: before, after: after)
        where trial.child.table.name != table.name || trial.child.key != key {
            try db.execute(sql: "SAVEPOINT tidemark_action_trial")
            var failure: Error?
            do {
                try RawStatement(db, sql: trial.sql).execute(binding: trial.arguments)
            } catch let refused as DatabaseError where refused.resultCode == .SQLITE_CONSTRAINT {
                if refused.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE, let clock,
                    let other = try laterRow(clashingWith: trial, at: clock)
                {
                    losers.append(other)
                } else {
                    clashes.append((trial.child, refused.message ?? message))
                }
            } catch {
                failure = error
            }
            try db.execute(sql: "ROLLBACK TO tidemark_action_trial; RELEASE tidemark_action_trial")
            if let failure { throw failure }
        }
        for loser in losers {
            guard let values = try RowAccess(db: db, table: loser.table).values(key: loser.key) else { continue }
            try systemDelete(
                table: loser.table, key: loser.key, values: values, kind: .unique, detail: loser.detail)
        }
        if !losers.isEmpty { return true }
        if clashes.isEmpty, after == nil {
            clashes = try foreignKeys.children(of: table, values: before)
                .filter { $0.table.name != table.name || $0.key != key }.map { ($0, message) }
        }
        // A child that references the row through two foreign keys is reached by both.
        var settled: Set<ActionEffects.Row> = []
        for (child, message) in clashes
        where settled.insert(ActionEffects.Row(table: child.table.name, key: child.key)).inserted {
            try systemDelete(
                table: child.table, key: child.key, values: child.values, kind: .foreignKey,
                detail:
                    "a foreign-key action on it broke a constraint when a change \(after == nil ? "deleted" : "updated") its row of '\(child.parent)': \(message)"
            )
        }
        return !clashes.isEmpty
    }

    /// The row that holds, in a UNIQUE index, the values `trial`'s action gives its child, when
    /// that row was written later than the child would be, at `clock` (merge.md §5.1: the
    /// greatest clock among the index's columns; if equal, the row whose key orders after), with
    /// the detail of its settling; nil when the child loses.
    private func laterRow(clashingWith trial: ForeignKeys.ActionTrial, at clock: MergeClock) throws
        -> (table: TrackedTable, key: [SQLValue], detail: String)?
    {
        let child = trial.child
        guard
            let (otherKey, columns) = try clashingRow(
                table: child.table, key: child.key, candidate: trial.written),
            let store = metadata[child.table.name]
        else { return nil }
        let mine = try store.fetch(db, key: child.key)
        let theirs = try store.fetch(db, key: otherKey)
        let otherLoses = Self.loses(
            otherKey, written: columns.compactMap { theirs.clocks[$0] }.max(), to: child.key,
            written: columns.compactMap { trial.changed.contains($0) ? clock : mine.clocks[$0] }.max())
        guard otherLoses else { return nil }
        let names = columns.map { child.table.columns[$0] }.joined(separator: ", ")
        let keyText = JSONText.object(zip(child.table.keyColumns, child.key).map { ($0, $1) })
        return (
            child.table, otherKey,
            "(\(names)) also claimed by row \(keyText) through a foreign-key action, written earlier"
        )
    }
}
