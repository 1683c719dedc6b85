import GRDB

/// The order a snapshot writes its tables' row states in (Protocol/pruning.md §5.1): live rows of
/// each table after those of the tables its foreign keys reference, then tombstones in the
/// opposite order. A receiver merges row states in the order they come, and merging a parent row
/// runs the application's foreign-key actions (`ON UPDATE CASCADE`, `ON DELETE CASCADE`, …) on the
/// child rows it holds then: a child merged before its parent's update would be changed again by
/// it, and a child that moved away from a parent since deleted must have moved before the delete.
enum SnapshotOrder {
    /// `tables` with each after the tables it references, in registration order otherwise. Tables
    /// that reference each other in a cycle keep their registration order among themselves; a
    /// table's references to itself are left out (its rows come in key order).
    static func parentsFirst(_ tables: [TrackedTable], in db: Database) throws -> [TrackedTable] {
        var parents: [[Int]] = []
        for table in tables {
            let referenced = try String.fetchAll(
                db, sql: "SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?)", arguments: [table.name])
            parents.append(
                tables.indices.filter { i in
                    tables[i].id != table.id && referenced.contains { TrackedTable.sameName($0, tables[i].name) }
                })
        }
        var placed = [Bool](repeating: false, count: tables.count)
        var order: [TrackedTable] = []
        while order.count < tables.count {
            // The first table in registration order whose parents are all placed; in a cycle, the
            // first not placed.
            let next =
                tables.indices.first { !placed[$0] && parents[$0].allSatisfy { placed[$0] } }
                ?? tables.indices.first { !placed[$0] }!
            placed[next] = true
            order.append(tables[next])
        }
        return order
    }
}
