import GRDB
import TidemarkCore

/// The rows of one imported transaction, or of one snapshot, whose write a constraint refused,
/// deferred until the rest of it is merged (Protocol/merge.md §5): a constraint binds the rows a
/// transaction leaves, not each of its steps. A value the receiver's own row holds may be given up
/// by a later change of the same transaction, and a row's later change may give up the value its
/// first one clashed on; settling the first refusal at once deleted a row its writer had kept.
///
/// Each later change of a deferred row in the transaction joins its deferred change (`join`), so
/// that the row is first written as the transaction left it; the later changes are then merged
/// again, in order, each with the values the transaction left (`take`): they change no value, but
/// an app's triggers fire as often as they fired where the transaction was written, and what they
/// write is set as that transaction's later changes set it (a counter the row's own trigger keeps
/// would otherwise count the joined write once more).
struct DeferredRows {
    /// A row identity: its table and key values.
    private struct Row: Hashable {
        let table: String
        let key: [SQLValue]
    }

    private var order: [Row] = []
    private var sources: [Row: MergeEngine.Source] = [:]
    /// Per row, the changes joined to its deferred change, in order.
    private var later: [Row: [History.Change]] = [:]

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
        later[row, default: []].append(change)
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

    /// Takes every deferred row out, in the order they were first deferred (or the reverse): for
    /// each, what to merge in turn: its joined change or row state, then the updates of the same
    /// life joined to it, each with the values the joined change leaves.
    mutating func take(reversed: Bool = false) -> [[MergeEngine.Source]] {
        defer {
            order = []
            sources = [:]
            later = [:]
        }
        return (reversed ? order.reversed() : order).map { row in
            let source = sources[row]!
            guard case .change(let final, let clock) = source, final.type != .delete, let after = later[row] else {
                return [source]
            }
            let values = Dictionary(final.values.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
            return [source]
                + after.filter { $0.type == .update && $0.generation == final.generation }.map { change in
                    var replay = change
                    replay.values = change.values.map { History.Column($0.name, values[$0.name] ?? $0.value) }
                    return .change(replay, clock)
                }
        }
    }
}

/// A write a constraint refused, which the engine defers instead of settling (`DeferredRows`). Thrown
/// before anything of the write is saved.
struct RefusedWrite: Error {}

extension MergeEngine {
    /// Merges the deferred rows again once the rest of their transaction or snapshot is in, as long
    /// as a pass merges any of them (each merged row may free a value another needs); what is
    /// refused still is then settled by the conflict rules (Protocol/merge.md §5), in the order it
    /// was deferred. Rows that need each other's values (two that swapped them, arriving in one
    /// snapshot) are settled as clashes: moving a value aside to let them pass would run the app's triggers
    /// and foreign-key actions on it, which no replica can undo.
    mutating func settleDeferred() throws {
        try flushNewRows()
        var reversed = false
        // Each pass but the last merges a row at least, so there are at most as many as rows. A
        // pass goes the other way from the one before: a row that needs the value of a row after
        // it (a list shifted by one, in key order) is merged in the next pass, not one row a pass.
        while !deferred.isEmpty {
            let rows = deferred.count
            for sources in deferred.take(reversed: reversed) {
                for source in sources { try apply(source) }
            }
            try flushNewRows()
            reversed.toggle()
            if deferred.count == rows { break }
        }
        guard !deferred.isEmpty else { return }
        settling = true
        defer { settling = false }
        for sources in deferred.take() {
            for source in sources { try apply(source) }
        }
        try flushNewRows()
    }
}
