import Foundation
import GRDB
import TidemarkCore

/// What a replica knows about one row identity, beyond its values (Protocol/merge.md §2): its causal
/// length and, for each non-key column, the clock of the write that set its value.
struct RowMetadata: Equatable {
    /// Causal length: 0 never seen, odd alive, even deleted.
    var generation: Int64
    /// Per column index; nil for key columns and columns not written in the current life.
    var clocks: [MergeClock?]
    /// The hash of the row's values as this replica last wrote or read them (Protocol/exchange.md
    /// §8); nil while the row is absent.
    var rowHash: Int64? = nil
    /// What the store held for this row when it was fetched (or last saved): a save replaces that
    /// hash with `rowHash` in the table's row digest.
    var saved = Saved(hash: nil, exists: false)

    /// The row hash and whether a metadata row existed, as stored.
    struct Saved: Equatable {
        var hash: Int64?
        var exists: Bool
    }

    /// The metadata of a row never seen, in a table of `columnCount` columns: generation 0, no
    /// clock, nothing saved.
    static func unseen(columnCount: Int) -> RowMetadata {
        RowMetadata(generation: 0, clocks: .init(repeating: nil, count: columnCount))
    }

    var isAlive: Bool { generation % 2 == 1 }

    /// The generation a delete leads to.
    var afterDelete: Int64 { isAlive ? generation + 1 : (generation == 0 ? 2 : generation) }
    /// The generation an insert leads to.
    var afterInsert: Int64 { isAlive ? generation : generation + 1 }

    /// Starts row life `generation`: no column has a clock yet. The row hash and what was saved stay.
    mutating func startLife(_ generation: Int64) {
        self.generation = generation
        clocks = .init(repeating: nil, count: clocks.count)
    }
}
