import Foundation
import TidemarkCore

/// Which transactions to fetch, as `NSPersistentHistoryChangeRequest` / SwiftData's
/// `HistoryDescriptor`. Every filter given must match; nil filters match everything.
///
/// ```swift
/// // What the editor wrote to notes since this consumer last looked.
/// let request = HistoryRequest(after: lastToken, authors: ["editor"], tables: ["note"])
/// for transaction in try store.fetchHistory(request) {
///     for change in transaction.changes { print(change.type, change.key) }
///     lastToken = transaction.token
/// }
/// ```
public struct HistoryRequest: Sendable {
    /// Only transactions this token does not cover. Throws `historyTokenExpired` if the token
    /// points into deleted history.
    public var after: History.Token?
    /// Only transactions timestamped after this date.
    public var afterDate: Date?
    /// Only transactions by one of these authors.
    public var authors: Set<String>?
    /// Only transactions with one of these context names.
    public var contextNames: Set<String>?
    /// Only changes to these tables (transactions with none are left out).
    public var tables: Set<String>?
    /// Only updates that changed this column of this table (`updatedProperties` contains it).
    public var updatedColumn: (table: String, column: String)?
    /// At most this many transactions, oldest first.
    public var limit: Int?

    /// Creates a request; with no arguments, every transaction the store holds.
    public init(
        after: History.Token? = nil, afterDate: Date? = nil, authors: Set<String>? = nil,
        contextNames: Set<String>? = nil,
        tables: Set<String>? = nil, updatedColumn: (table: String, column: String)? = nil, limit: Int? = nil
    ) {
        self.after = after
        self.afterDate = afterDate
        self.authors = authors
        self.contextNames = contextNames
        self.tables = tables
        self.updatedColumn = updatedColumn
        self.limit = limit
    }

    /// Whether a change passes the change-level filters.
    func matches(_ change: History.Change) -> Bool {
        if let tables, !tables.contains(change.table) { return false }
        if let (table, column) = updatedColumn {
            return change.type == .update && change.table == table && change.values.contains { $0.name == column }
        }
        return true
    }

    var filtersChanges: Bool { tables != nil || updatedColumn != nil }
}
