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

    var isAlive: Bool { generation % 2 == 1 }

    /// The generation a delete leads to.
    var afterDelete: Int64 { isAlive ? generation + 1 : (generation == 0 ? 2 : generation) }
    /// The generation an insert leads to.
    var afterInsert: Int64 { isAlive ? generation : generation + 1 }
}
