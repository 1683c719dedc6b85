import Foundation
import GRDB
import TidemarkCore

extension SchemaMigrator {
    /// The registration of `old` after the SQL ran, or a refusal naming what tracking cannot follow.
    ///
    /// Where its triggers stayed, SQLite renamed the table and columns in them as it renamed them
    /// in the table: the insert trigger names every column in slot order. Where they were lifted,
    /// or the table was rebuilt (its triggers dropped with it), columns are matched by name.
    /// Long by design: the refusals are checked in this order, each with the message it gives.
    func followed(_ old: TrackedTable, lifted: Bool, at position: Int) throws -> TrackedTable {
        let trigger =
            lifted
            ? nil
            : try Row.fetchOne(
                db, sql: "SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                arguments: [CaptureTriggers.names(for: old)[0]])
        var names = Dictionary(uniqueKeysWithValues: zip(old.slots, old.columns))
        var tableName = old.name
        if let trigger {
            tableName = trigger[0]
            let renamed = CaptureTriggers.insertedColumns(in: trigger[1], of: old)
            if renamed.count == old.columns.count { names = Dictionary(uniqueKeysWithValues: zip(old.slots, renamed)) }
        }
        guard let shape = try TrackedTable.shapeIfPresent(of: tableName, in: db) else {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "it was dropped\(lifted ? " or renamed" : ""); untrack a table to drop it (Migration.untrack)")
        }
        let renamedKeys = old.keyIndexes.map { names[old.slots[$0]]! }
        if renamedKeys != old.keyColumns {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "its key column '\(old.keyColumns.joined(separator: ", "))' was renamed; the key is each row's identity on every replica"
            )
        }
        if shape.keyColumns != old.keyColumns {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "its primary key changed from (\(old.keyColumns.joined(separator: ", "))) to (\(shape.keyColumns.joined(separator: ", "))); "
                    + "the key is each row's identity on every replica")
        }
        let reserved = old.name.lowercased().hasPrefix(Bookkeeping.prefix)
        if let (reason, _) = try TrackedTable.refusal(of: tableName, shape, in: db, allowReserved: reserved) {
            throw StoreError.unsupportedMigration(table: old.name, change: "it could no longer be tracked: \(reason)")
        }
        let gone = old.slots.filter { !shape.columns.contains(names[$0]!) }
        let added = shape.columns.filter { !names.values.contains($0) }
        if trigger == nil && !gone.isEmpty && !added.isEmpty {
            throw StoreError.unsupportedMigration(
                table: old.name,
                change:
                    "column(s) \(gone.map { "'\(names[$0]!)'" }.joined(separator: ", ")) went and \(added.map { "'\($0)'" }.joined(separator: ", ")) "
                    + "came in a migration that also dropped or rebuilt the table, so a rename cannot be told from a drop and an add; "
                    + "rename in a migration of its own")
        }
        var table = old
        table.name = tableName
        var next = old.slotCount
        let slotByName = Dictionary(uniqueKeysWithValues: names.map { ($0.value, $0.key) })
        table.columns = shape.columns
        table.slots = shape.columns.map { name in
            if let slot = slotByName[name], !gone.contains(slot) { return slot }
            next += 1
            return next - 1
        }
        table.keyIndexes = shape.keyColumns.map { shape.columns.firstIndex(of: $0)! }
        table.preservedIndexes = old.preservedIndexes.compactMap { table.slots.firstIndex(of: old.slots[$0]) }.sorted()
        table.retired += gone.map { TrackedTable.Retired(slot: $0, name: names[$0]!, droppedAt: position) }
        let limit = Bookkeeping.maxTrackedColumns(db, keyCount: table.keyIndexes.count)
        if table.slotCount > limit {
            throw StoreError.tooManyColumnSlots(table: old.name, slots: table.slotCount, limit: limit)
        }
        return table
    }
}
