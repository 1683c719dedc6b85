import GRDB
import TidemarkCore

/// The rows of one imported transaction, or of one snapshot, whose write a constraint refused,
/// deferred until the rest of it is merged (Protocol/merge.md §5): a constraint binds the rows a
/// transaction leaves, not each of its steps. A value the receiver's own row holds may be given up
/// by a later change of the same transaction, and a row's later change may give up the value its
/// first one clashed on; settling the first refusal at once deleted a row its writer had kept.
///
/// Each later change of a deferred row in the transaction joins its deferred change (`join`), so
/// that the row is merged once, as the transaction left it.
struct DeferredRows {
    /// A row identity: its table and key values.
    private struct Row: Hashable {
        let table: String
        let key: [SQLValue]
    }

    private var order: [Row] = []
    private var sources: [Row: MergeEngine.Source] = [:]

    var isEmpty: Bool { order.isEmpty }
    var count: Int { order.count }

    /// Defers `source`, the change or row state of row `key` of `table`.
    mutating func add(_ source: MergeEngine.Source, table: String, key: [History.Column]) {
        let row = Row(table: table, key: key.map(\.value))
        if sources.updateValue(source, forKey: row) == nil { order.append(row) }
    }

    /// Joins `change` to the deferred change of its row, of the same transaction; false, changing
    /// nothing, when its row is not deferred.
    mutating func join(_ change: History.Change) -> Bool {
        guard !order.isEmpty else { return false }
        let row = Row(table: change.table, key: change.key.map(\.value))
        guard case .change(let first, let clock)? = sources[row] else { return false }
        sources[row] = .change(Self.joined(first, then: change), clock)
        return true
    }

    /// One change that leaves the row as `first` and then `next`, two changes of it in one
    /// transaction, leave it. A later life (a delete, or an insert after one) replaces what came
    /// before; an update of the same life sets its columns over the earlier change's.
    static func joined(_ first: History.Change, then next: History.Change) -> History.Change {
        if next.generation > first.generation { return next }
        guard next.generation == first.generation, next.type == .update, first.type != .delete else { return first }
        var result = first
        for column in next.values {
            if let i = result.values.firstIndex(where: { $0.name == column.name }) {
                result.values[i] = column
            } else {
                result.values.append(column)
            }
        }
        return result
    }

    /// Takes every deferred row out, in the order they were first deferred.
    mutating func take() -> [MergeEngine.Source] {
        defer {
            order = []
            sources = [:]
        }
        return order.map { sources[$0]! }
    }
}

/// A write a constraint refused, which the engine defers instead of settling (`DeferredRows`). Thrown
/// before anything of the write is saved.
struct RefusedWrite: Error {}

extension MergeEngine {
    /// Merges the deferred rows again once the rest of their transaction or snapshot is in, as long
    /// as a pass merges any of them (each merged row may free a value another needs); what is
    /// refused still is then settled by the conflict rules (Protocol/merge.md §5), in the order it
    /// was deferred.
    /// Rows that need each other's values (two rows that swapped values through a third that the
    /// receiver's own row holds) are settled as clashes: no order merges them.
    mutating func settleDeferred() throws {
        try flushNewRows()
        // Each pass but the last merges one row at least: at most one pass per row, and a bound.
        for _ in 0..<16 where !deferred.isEmpty {
            let rows = deferred.take()
            for source in rows { try apply(source) }
            try flushNewRows()
            if deferred.count == rows.count { break }
        }
        guard !deferred.isEmpty else { return }
        settling = true
        defer { settling = false }
        for source in deferred.take() { try apply(source) }
        try flushNewRows()
    }
}
