import Foundation
import GRDB
import TidemarkCore

/// Keeps each replicated table's row digest (Protocol/exchange.md §8) in `tidemark_digests`, its
/// only owner, and notes when the kept digests can be vouched for. Every save of row metadata
/// replaces the row's old hash with its new one here, and `flush` adds the sums up once per
/// access: no write scans a table.
///
/// A table with no row in `tidemark_digests` has no known digest, and `Store.rowDigest` counts it
/// again with a scan the next time one is needed: after an upgrade, after a migration that may
/// have changed its row hashes (`SchemaMigrator`), after a foreign-key action may have changed rows
/// behind the merge, and after a client changed the schema (which is how capture triggers are
/// removed and put back).
final class RowDigests {
    let db: Database
    /// What this access did to each table, by table id: few tables, so one is found by a scan
    /// from the last one used (most saves follow one of the same table).
    private var pending: [(table: Int64, delta: Pending)] = []
    private var last = 0

    private struct Pending {
        /// The change to the row count and to the sum of hashes.
        var rows: Int64 = 0
        var sum: UInt64 = 0
        var changed = false
        /// A row with no metadata was saved for the first time.
        var firstSeen = false
        /// The merge wrote or removed rows (an app's triggers may follow).
        var merged = false
        /// The merge removed or updated rows (foreign-key actions may follow too; an insert of a
        /// new row sets none off).
        var changedExisting = false

        mutating func replace(old: RowMetadata.Saved, new: Int64?) {
            if !old.exists { firstSeen = true }
            guard old.hash != new else { return }
            changed = true
            if let hash = old.hash {
                rows -= 1
                sum &-= UInt64(bitPattern: hash)
            }
            if let hash = new {
                rows += 1
                sum &+= UInt64(bitPattern: hash)
            }
        }
    }

    init(db: Database) { self.db = db }

    /// The row hash this build computes: 2 leaves out cells that hold their column's hash default
    /// (Protocol/exchange.md §8.1); 1, of earlier builds, hashed every non-NULL cell. Digests kept
    /// under another rule are not trusted: they are counted again.
    static let hashRule = 2

    /// Replaces a row's hash: `old` as stored before, `new` after (nil: the row is absent).
    func replace(table: TrackedTable, old: RowMetadata.Saved, new: Int64?) {
        pending[slot(table.id)].delta.replace(old: old, new: new)
    }

    /// Notes that the merge wrote or removed rows of `table` (foreign-key actions may follow).
    /// Notes that the merge wrote or removed rows of `table`: rows it had (`existing`), or new ones
    /// only.
    func noteMerged(_ table: TrackedTable, existing: Bool = true) {
        pending[slot(table.id)].delta.merged = true
        if existing { pending[slot(table.id)].delta.changedExisting = true }
    }

    /// The index of `table`'s entry in `pending`, made when it has none.
    private func slot(_ table: Int64) -> Int {
        if last < pending.count && pending[last].table == table { return last }
        if let found = pending.firstIndex(where: { $0.table == table }) {
            last = found
        } else {
            pending.append((table, Pending()))
            last = pending.count - 1
        }
        return last
    }

    /// Adds what was replaced to the stored digests, and forgets those it can no longer vouch for.
    /// `appTriggers` is what `AppTriggers.targets` reads, and `actionParents` what
    /// `foreignKeyActionParents` reads, when the caller read them already.
    func flush(
        tables: [TrackedTable], appTriggers: [String: Set<String>]? = nil, actionParents: [String: Set<String>]? = nil
    ) throws {
        for (id, delta) in pending where delta.changed {
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT rows, sum, untracked FROM tidemark_digests WHERE table_id = ?", arguments: [id])
            else { continue }
            if delta.firstSeen, row[2] as Int64 > 0 {
                // A row the last count found without metadata may be the one just saved: count again.
                try Self.forget(id, db)
                continue
            }
            let sum = UInt64(bitPattern: row[1]) &+ delta.sum
            try db.execute(
                sql: "UPDATE tidemark_digests SET rows = ?, sum = ? WHERE table_id = ?",
                arguments: [(row[0] as Int64) + delta.rows, Int64(bitPattern: sum), id])
        }
        let pending = self.pending
        let names = { (included: (Pending) -> Bool) in
            Set(
                tables.filter { table in pending.contains { $0.table == table.id && included($0.delta) } }.map {
                    $0.name.lowercased()
                })
        }
        let mergedNames = names(\.merged)
        let existingNames = names(\.changedExisting)
        self.pending = []
        if !mergedNames.isEmpty {
            // Rows the merge did not write itself, and did not count: those the app's triggers
            // (which run as rows merge) and a foreign key's action (which a delete or an update
            // sets off) change, and what these change in turn.
            let parents = try actionParents ?? Self.foreignKeyActionParents(db)
            let targets = try appTriggers ?? AppTriggers.targets(db)
            var reached: Set<String> = []
            while true {
                var next = AppTriggers.reach(from: mergedNames.union(reached), targets: targets)
                let acting = existingNames.union(reached)
                next.formUnion(parents.filter { !$0.value.isDisjoint(with: acting) }.keys)
                guard !next.isSubset(of: reached) else { break }
                reached.formUnion(next)
            }
            for table in tables where reached.contains(table.name.lowercased()) {
                try Self.forget(table.id, db)
            }
        }
    }

    /// The digest kept for `table`, if it is known.
    static func kept(_ table: TrackedTable, _ db: Database) throws -> RowDigest.Table? {
        try Row.fetchOne(db, sql: "SELECT rows, sum FROM tidemark_digests WHERE table_id = ?", arguments: [table.id])
            .map { .init(name: table.name, rows: UInt64($0[0] as Int64), sum: UInt64(bitPattern: $0[1])) }
    }

    /// Keeps what a count of `table` found, and returns its entry.
    static func keep(_ count: RowCount.Result, of table: TrackedTable, _ db: Database) throws -> RowDigest.Table {
        try db.execute(
            sql: "INSERT INTO tidemark_digests(table_id, rows, sum, untracked) VALUES (?, ?, ?, ?)",
            arguments: [table.id, count.rows, Int64(bitPattern: count.sum), count.untracked])
        return count.entry(table)
    }

    /// Whether the kept digests can be vouched for: they follow this build's row hash, and no
    /// client changed the schema since they were (SQLite's schema cookie, which every schema change
    /// by any client increments, is as noted).
    static func trusted(_ db: Database) throws -> Bool {
        try Bookkeeping.meta(db, Bookkeeping.Meta.digestSchemaVersion) == Int64(db.schemaVersion()).databaseValue
            && Bookkeeping.meta(db, Bookkeeping.Meta.rowHashRule) == hashRule.databaseValue
    }

    /// Notes the schema cookie as it is now, and this build's row hash: the kept digests are
    /// vouched for from here on.
    static func trust(_ db: Database) throws {
        try Bookkeeping.setMeta(db, Bookkeeping.Meta.digestSchemaVersion, Int64(db.schemaVersion()))
        try Bookkeeping.setMeta(db, Bookkeeping.Meta.rowHashRule, hashRule)
    }

    /// Forgets a table's digest: the next `Store.rowDigest` counts it again.
    static func forget(_ table: Int64, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM tidemark_digests WHERE table_id = ?", arguments: [table])
    }

    /// Forgets every table's digest.
    static func forgetAll(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM tidemark_digests")
    }

    /// For each table of the main schema (lowercased), tracked or not, the parent tables whose
    /// deletes or updates change its rows by a foreign-key action (lowercased): an action reaches
    /// a tracked table through an untracked one too.
    static func foreignKeyActionParents(_ db: Database) throws -> [String: Set<String>] {
        var parents: [String: Set<String>] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT t.name, f."table" FROM pragma_table_list AS t, pragma_foreign_key_list(t.name) AS f
                WHERE t.schema = 'main' AND t.type = 'table'
                  AND (f.on_delete NOT IN ('NO ACTION', 'RESTRICT') OR f.on_update NOT IN ('NO ACTION', 'RESTRICT'))
                """)
        {
            parents[(row[0] as String).lowercased(), default: []].insert((row[1] as String).lowercased())
        }
        return parents
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension RowDigests: Sendable {}
