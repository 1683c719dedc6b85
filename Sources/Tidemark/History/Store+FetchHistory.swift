import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// Fetches transactions in the order this store received them (each origin's in sequence
    /// order). Pending writes from other clients are sealed first, so none is missing (on a store
    /// opened read-only, which cannot seal them, they are left out until a writer seals them).
    ///
    /// Throws `StoreError.historyTokenExpired` if `request.after` points into deleted history, and
    /// `StoreError.foreignToken` if it claims transactions of this replica the store never made.
    public func fetchHistory(_ request: HistoryRequest = HistoryRequest()) throws -> [History.Transaction] {
        try sealForeignWritesBeforeReading()
        do {
            return try database.read { db in try HistoryReader(store: self, db: db).fetch(request) }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreConnection.mapped(error, path: path)
        }
    }
}

/// Reads history inside one read transaction.
struct HistoryReader {
    let store: Store
    let db: Database

    struct Header {
        var localID: Int64
        var origin: Replica.ID
        var sequence: Int64
        var timestamp: HLCTimestamp
        var author: String?
        var contextName: String?
        var processID: Int32?
        var firstChange: Int64
        var lastChange: Int64
        var schema: Int
    }

    func fetch(_ request: HistoryRequest) throws -> [History.Transaction] {
        if let token = request.after { try HistoryQuery.checkUsable(token, own: store.replica.id, db) }
        var request = request
        if let tables = request.tables { request.tables = try Self.checkHistoryHeld(of: tables, db) }
        let (conditions, arguments) = Self.conditions(of: request)
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let headers = try Row.fetchAll(
            db,
            sql: """
                SELECT id, replica, seq, hlc, author, context, pid, first_change, last_change, schema
                FROM tidemark_transactions \(whereClause) ORDER BY id
                """,
            arguments: StatementArguments(arguments)
        ).map(Self.header)
        guard !headers.isEmpty else { return [] }

        let tokens = try tokensAfter(from: headers[0].localID)
        let decoder = try ChangeDecoder(db, store: store)
        let changes = try RawStatement(db, sql: HistoryQuery.changesOfTransaction(selecting: decoder.selectList))
        let versions = try SchemaLineage.fetch(db)
        // This replica's transactions past the fold have no generations yet.
        let foldedThrough = try ReplicaState.fetch(db).foldedSequence
        var result: [History.Transaction] = []
        for header in headers {
            var list: [History.Change] = []
            let folded = header.origin != store.replica.id || header.sequence <= foldedThrough
            changes.reset()
            try changes.bind(header.firstChange, at: 1)
            try changes.bind(header.lastChange, at: 2)
            while try changes.step() {
                if let change = decoder.decode(changes, position: header.schema, folded: folded),
                    request.matches(change)
                {
                    list.append(change)
                }
            }
            if request.filtersChanges && list.isEmpty { continue }
            result.append(
                History.Transaction(
                    origin: header.origin, sequence: header.sequence, timestamp: header.timestamp,
                    author: header.author,
                    contextName: header.contextName, processID: header.processID, changes: list,
                    token: tokens[header.localID] ?? .zero,
                    schemaVersion: header.schema > 0 && header.schema <= versions.count
                        ? versions[header.schema - 1] : nil))
            if let limit = request.limit, result.count >= limit { break }
        }
        return result
    }

    /// Returns `tables` as they were registered (`t` for `T`, as SQLite matches names), refusing
    /// a table whose changes history cannot hold: one the store has but never tracked
    /// (`neverTracked`), or a name no table has (`unknownTable`). A table tracked once and
    /// untracked since keeps its history.
    static func checkHistoryHeld(of tables: Set<String>, _ db: Database) throws -> Set<String> {
        let registered = try TrackedTable.fetchAll(db, includingUntracked: true).map(\.name)
        return Set(
            try tables.sorted().map { table in
                guard let name = registered.first(where: { TrackedTable.sameName($0, table) }) else {
                    throw try db.tableExists(table) ? StoreError.neverTracked(table) : StoreError.unknownTable(table)
                }
                return name
            })
    }

    /// The conditions of the SQL that selects the transactions `request` asks for, with their
    /// arguments.
    static func conditions(of request: HistoryRequest) -> ([String], [any DatabaseValueConvertible]) {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let token = request.after, let after = HistoryQuery.notCovered(by: token) {
            conditions.append(after.sql)
            arguments += after.arguments
        }
        if let date = request.afterDate {
            let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
            conditions.append("hlc > ?")
            arguments.append(HLCTimestamp(milliseconds: ms, counter: .max).packed)
        }
        if let authors = request.authors {
            conditions.append("author IN (\(authors.map { _ in "?" }.joined(separator: ",")))")
            arguments += authors.map { $0 as any DatabaseValueConvertible }
        }
        if let contexts = request.contextNames {
            conditions.append("context IN (\(contexts.map { _ in "?" }.joined(separator: ",")))")
            arguments += contexts.map { $0 as any DatabaseValueConvertible }
        }
        return (conditions, arguments)
    }

    static func header(_ row: Row) throws -> Header {
        Header(
            localID: row[0], origin: try row.decode(Replica.ID.self, atIndex: 1), sequence: row[2],
            timestamp: HLCTimestamp(packed: row[3]), author: row[4], contextName: row[5], processID: row[6],
            firstChange: row[7], lastChange: row[8], schema: row[9])
    }

    /// The token after each transaction from local position `first` on, walking back from the
    /// current token: before transaction (r, s), replica r's entry was s - 1.
    func tokensAfter(from first: Int64) throws -> [Int64: History.Token] {
        var token = try Store.currentToken(db)
        var tokens: [Int64: History.Token] = [:]
        let rows = try Row.fetchCursor(
            db, sql: "SELECT id, replica, seq FROM tidemark_transactions WHERE id >= ? ORDER BY id DESC",
            arguments: [first])
        while let row = try rows.next() {
            tokens[row[0]] = token
            token[try row.decode(Replica.ID.self, atIndex: 1)] = (row[2] as Int64) - 1
        }
        return tokens
    }
}
