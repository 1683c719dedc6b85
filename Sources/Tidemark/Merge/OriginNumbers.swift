import Foundation
import GRDB
import TidemarkCore

/// Small local numbers for replica ids, so that row metadata stores a byte or two per clock
/// instead of 16. Caches what it has looked up; lives for one database access.
final class OriginNumbers {
    private let db: Database
    private var numbers: [Replica.ID: Int64] = [:]
    private var ids: [Int64: Replica.ID] = [:]
    /// The origin asked for last: most clocks in a row of changes have the same origin, and
    /// comparing its 16 bytes costs less than hashing them.
    private var last: (origin: Replica.ID, number: Int64)?

    init(db: Database) { self.db = db }

    /// The number of `origin`, assigned on first use.
    func number(of origin: Replica.ID) throws -> Int64 {
        if let last, last.origin == origin { return last.number }
        if let known = numbers[origin] {
            last = (origin, known)
            return known
        }
        let key = Data(origin.bytes)
        if let existing = try Int64.fetchOne(
            db, sql: "SELECT id FROM tidemark_origins WHERE replica = ?", arguments: [key])
        {
            remember(origin, existing)
            return existing
        }
        try db.execute(sql: "INSERT INTO tidemark_origins(replica) VALUES (?)", arguments: [key])
        remember(origin, db.lastInsertedRowID)
        return db.lastInsertedRowID
    }

    /// The replica id with number `number`.
    func origin(_ number: Int64) throws -> Replica.ID? {
        if let known = ids[number] { return known }
        guard
            let data = try Data.fetchOne(
                db, sql: "SELECT replica FROM tidemark_origins WHERE id = ?", arguments: [number]),
            let origin = Replica.ID(bytes: [UInt8](data))
        else { return nil }
        remember(origin, number)
        return origin
    }

    private func remember(_ origin: Replica.ID, _ number: Int64) {
        numbers[origin] = number
        ids[number] = origin
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension OriginNumbers: Sendable {}
