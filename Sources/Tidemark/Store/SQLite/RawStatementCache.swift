import GRDB

/// Raw statements prepared on first use and kept for one database access, by SQL text.
final class RawStatementCache {
    private let db: Database
    private var statements: [String: RawStatement] = [:]

    init(db: Database) { self.db = db }

    /// The statement for `sql`, reset and ready to bind.
    func statement(_ sql: String) throws -> RawStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let statement = try RawStatement(db, sql: sql)
        statements[sql] = statement
        return statement
    }
}
