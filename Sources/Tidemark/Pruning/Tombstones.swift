import Foundation
import GRDB
import TidemarkCore

/// When a tombstone may go, and where a row life starts once one has (Protocol/pruning.md §6): the
/// one owner of `tidemark_epochs` and `tidemark_floors`.
///
/// A tombstone is stamped with the epoch it was saved in. Each prune closes the open epoch at this
/// replica's token, which covers every delete that epoch's tombstones record; once every member has
/// applied that token, the epoch's tombstones are dropped, and each table's generation floor rises
/// to the greatest generation dropped, so that a life started here later outranks every life that
/// any member may still remember of the row.
struct Tombstones {
    let db: Database

    /// The epoch a tombstone saved now belongs to.
    static func openEpoch(_ db: Database) throws -> Int64 {
        (try Int64.fetchOne(db, sql: "SELECT max(epoch) FROM tidemark_epochs") ?? 0) + 1
    }

    /// Closes the open epoch at `token`, this replica's token now. Nothing changes when the last
    /// closed epoch has that token: no delete was applied since.
    func closeEpoch(at token: History.Token) throws {
        let last = try String.fetchOne(db, sql: "SELECT token FROM tidemark_epochs ORDER BY epoch DESC LIMIT 1")
        guard last != token.description else { return }
        try db.execute(
            sql: "INSERT INTO tidemark_epochs(epoch, token) VALUES (?, ?)",
            arguments: [try Self.openEpoch(db), token.description])
    }

    /// The last closed epoch whose token `horizon` covers, or 0.
    func lastEpoch(coveredBy horizon: History.Token) throws -> Int64 {
        var through: Int64 = 0
        for row in try Row.fetchAll(db, sql: "SELECT epoch, token FROM tidemark_epochs ORDER BY epoch") {
            // Tokens of later epochs cover those of earlier ones: the first one not covered ends it.
            guard let token = try? History.Token(parsing: row[1]), horizon.covers(token) else { break }
            through = row[0]
        }
        return through
    }

    /// Drops the tombstones of every epoch up to `epoch` from the row metadata of `tables`, and
    /// raises each table's floor to the greatest generation dropped; returns how many were dropped.
    /// With `dryRun`, only counts them. Nothing is read when the tombstones through `epoch` were
    /// dropped already: every tombstone saved since belongs to a later epoch.
    func drop(through epoch: Int64, tables: [TrackedTable], dryRun: Bool = false) throws -> Int {
        guard epoch > 0,
            try Bool.fetchOne(db, sql: "SELECT dropped FROM tidemark_epochs WHERE epoch = ?", arguments: [epoch])
                != true
        else { return 0 }
        var dropped = 0
        for table in tables {
            let name = Bookkeeping.rowMetadataTable(table)
            // Tombstones saved before epochs existed have no stamp: they belong to the first.
            let tombstones = "FROM \(name) WHERE gen % 2 = 0 AND coalesce(t, 1) <= ?"
            guard let row = try Row.fetchOne(db, sql: "SELECT count(*), max(gen) \(tombstones)", arguments: [epoch]),
                let count = row[0] as Int?, count > 0, let greatest = row[1] as Int64?
            else { continue }
            dropped += count
            guard !dryRun else { continue }
            try db.execute(sql: "DELETE \(tombstones)", arguments: [epoch])
            try raiseFloor(of: table.id, to: greatest)
        }
        if !dryRun {
            try db.execute(sql: "DELETE FROM tidemark_epochs WHERE epoch < ?", arguments: [epoch])
            try db.execute(sql: "UPDATE tidemark_epochs SET dropped = 1 WHERE epoch = ?", arguments: [epoch])
        }
        return dropped
    }

    /// Raises the floor of the table with registration `id` to `generation` (even), if below.
    func raiseFloor(of id: Int64, to generation: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO tidemark_floors(table_id, floor) VALUES (?, ?)
                ON CONFLICT(table_id) DO UPDATE SET floor = max(floor, excluded.floor)
                """,
            arguments: [id, generation])
    }

    /// Each table's generation floor, by registration id; tables without one are absent (floor 0).
    static func floors(_ db: Database) throws -> [Int64: Int64] {
        var floors: [Int64: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT table_id, floor FROM tidemark_floors") { floors[row[0]] = row[1] }
        return floors
    }

    /// How many tombstones the row metadata of `tables` holds.
    static func count(_ db: Database, tables: [TrackedTable]) throws -> Int {
        try tables.reduce(0) { sum, table in
            sum
                + (try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM \(Bookkeeping.rowMetadataTable(table)) WHERE gen % 2 = 0") ?? 0)
        }
    }
}
