import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// Deletes every transaction `token` covers, with its changes (`NSPersistentHistoryChangeRequest.deleteHistory(before:)`).
    /// Fetching after an older token then throws `historyTokenExpired`. Returns how many
    /// transactions were deleted.
    @discardableResult
    public func deleteHistory(before token: History.Token) throws -> Int {
        try sealForeignWrites()
        return try mappingErrors {
            try writeImmediately { db in try HistoryPruner(db: db, store: self).delete(through: token) }
        }
    }

    /// Deletes every transaction timestamped before `date`, with its changes. Returns how many
    /// transactions were deleted.
    @discardableResult
    public func deleteHistory(before date: Date) throws -> Int {
        try sealForeignWrites()
        let bound = HLCTimestamp(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)), counter: 0)
            .packed
        return try mappingErrors {
            try writeImmediately { db in
                // Each replica's timestamps grow with its sequence numbers, so "before a date" is
                // a prefix of every replica's history, which a token describes exactly.
                var token = History.Token.zero
                for row in try Row.fetchAll(
                    db, sql: "SELECT replica, max(seq) FROM tidemark_transactions WHERE hlc < ? GROUP BY replica",
                    arguments: [bound])
                {
                    token[try row.decode(Replica.ID.self, atIndex: 0)] = row[1]
                }
                return try HistoryPruner(db: db, store: self).delete(through: token)
            }
        }
    }
}
