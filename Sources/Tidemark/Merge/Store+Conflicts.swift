import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A row that a merge rule deleted because merged state broke a constraint (Protocol/merge.md §5),
    /// or whose edits a delete that had not seen them discarded (§4.5). The values are kept here so
    /// the application can repair: a repair is an ordinary write.
    public struct Conflict: Sendable, Hashable {
        /// The table.
        public var table: String
        /// The row's key as a JSON object.
        public var key: String
        /// The row's causal length after the resolution.
        public var generation: Int64
        /// unique, foreign_key, check, not_null, removed, remote (resolved by another replica), or
        /// deleted (edits discarded by a delete that had not seen them).
        public var kind: String
        /// What clashed.
        public var detail: String
        /// The discarded values (non-key columns) as a JSON object.
        public var row: String
        /// When this store recorded it.
        public var detected: HLCTimestamp
        /// The replica that resolved it; for `deleted`, the replica whose delete (or later life)
        /// won, or the retired member whose late edit was discarded.
        public var resolvedBy: Replica.ID
    }

    /// Every recorded conflict, oldest first.
    public func conflicts() throws -> [Conflict] {
        try mappingErrors {
            try database.read { db in
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT table_name, key, generation, kind, detail, row, detected, origin FROM tidemark_conflicts ORDER BY id"
                ).map {
                    Conflict(
                        table: $0[0], key: $0[1], generation: $0[2], kind: $0[3], detail: $0[4], row: $0[5],
                        detected: HLCTimestamp(packed: $0[6]), resolvedBy: try $0.decode(Replica.ID.self, atIndex: 7))
                }
            }
        }
    }
}
