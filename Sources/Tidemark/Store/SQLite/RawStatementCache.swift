import GRDB

/// Raw statements prepared on first use and kept for one database access, by SQL text.
final class RawStatementCache {
    private let db: Database
    private var statements: [String: RawStatement] = [:]

    init(db: Database) { self.db = db }

    /// The statement for `sql`, reset and ready to bind.
    func statement(_ sql: String) throws -> RawStatement {
        try RawStatement.reusing(&statements[sql], db) { sql }
    }
}

extension RawStatement {
    /// The statement in `slot`, reset and ready to bind; prepared from `sql` and stored there on
    /// first use. Every statement kept for reuse goes through here.
    static func reusing(_ slot: inout RawStatement?, _ db: Database, sql: () -> String) throws -> RawStatement {
        if let statement = slot {
            statement.reset()
            return statement
        }
        let statement = try RawStatement(db, sql: sql())
        slot = statement
        return statement
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension RawStatementCache: Sendable {}
