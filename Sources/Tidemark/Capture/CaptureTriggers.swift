import GRDB

/// The SQL triggers that record every insert, update and delete on a tracked table into
/// `tidemark_changes`.
///
/// They use only SQLite built-ins, so writes from any client — the `sqlite3` shell, another
/// language's driver — are captured without loading Tidemark. A captured change is *pending* until
/// it is sealed into a transaction (see `Sealer`).
enum CaptureTriggers {
    /// Trigger names for a table.
    static func names(for table: TrackedTable) -> [String] {
        ["insert", "update", "rekey", "delete"].map { "\(Bookkeeping.prefix)\(table.id)_\($0)" }
    }

    /// Installs the triggers for `table`.
    static func install(_ table: TrackedTable, in db: Database) throws {
        for statement in sql(for: table) { try db.execute(sql: statement) }
    }

    /// Removes the triggers for `table`.
    static func remove(_ table: TrackedTable, in db: Database) throws {
        for name in names(for: table) { try db.execute(sql: "DROP TRIGGER IF EXISTS \(name.quotedDatabaseIdentifier)") }
    }

    /// The CREATE TRIGGER statements.
    static func sql(for table: TrackedTable) -> [String] {
        let t = table.name.quotedDatabaseIdentifier
        let n = names(for: table).map(\.quotedDatabaseIdentifier)
        let cols = table.columns.map(\.quotedDatabaseIdentifier)
        let valueColumns = table.columns.indices.map(Bookkeeping.valueColumn).joined(separator: ", ")
        let target = "tidemark_changes(table_id, op, mask, \(valueColumns))"
        let allMask = (Int64(1) << table.columns.count) - 1
        // `IS` compares numbers by value (1 IS 1.0), so the storage class is compared too: a change of
        // class is a change of value for a replica that keeps classes exactly.
        let keySame = table.keyIndexes.map { "(OLD.\(cols[$0]) IS NEW.\(cols[$0]) AND typeof(OLD.\(cols[$0])) = typeof(NEW.\(cols[$0])))" }
            .joined(separator: " AND ")
        let keyDiffers = "NOT (\(keySame))"
        let nonKey = table.columns.indices.filter { !table.keyIndexes.contains($0) }
        let changed = { (i: Int) in "(OLD.\(cols[i]) IS NOT NEW.\(cols[i]) OR typeof(OLD.\(cols[i])) <> typeof(NEW.\(cols[i])))" }

        // Delete tombstone: key and preserved columns from OLD, other columns NULL with mask bit clear.
        let kept = Set(table.keyIndexes + table.preservedIndexes)
        let tombstoneMask = kept.reduce(Int64(0)) { $0 | (1 << Int64($1)) }
        let tombstoneValues = cols.indices.map { kept.contains($0) ? "OLD.\(cols[$0])" : "NULL" }.joined(separator: ", ")
        let insertValues = cols.map { "NEW.\($0)" }.joined(separator: ", ")
        let insertOp = Bookkeeping.Op.insert.rawValue
        let updateOp = Bookkeeping.Op.update.rawValue
        let deleteOp = Bookkeeping.Op.delete.rawValue

        var statements = [
            """
            CREATE TRIGGER \(n[0]) AFTER INSERT ON \(t) BEGIN
              INSERT INTO \(target) VALUES (\(table.id), \(insertOp), \(allMask), \(insertValues));
            END
            """,
            """
            CREATE TRIGGER \(n[2]) AFTER UPDATE ON \(t) WHEN \(keyDiffers) BEGIN
              INSERT INTO \(target) VALUES (\(table.id), \(deleteOp), \(tombstoneMask), \(tombstoneValues));
              INSERT INTO \(target) VALUES (\(table.id), \(insertOp), \(allMask), \(insertValues));
            END
            """,
            """
            CREATE TRIGGER \(n[3]) AFTER DELETE ON \(t) BEGIN
              INSERT INTO \(target) VALUES (\(table.id), \(deleteOp), \(tombstoneMask), \(tombstoneValues));
            END
            """,
        ]
        if !nonKey.isEmpty {
            let anyChanged = nonKey.map(changed).joined(separator: " OR ")
            let mask = nonKey.map { "((\(changed($0))) << \($0))" }.joined(separator: " | ")
            let keyMask = table.keyIndexes.reduce(Int64(0)) { $0 | (1 << Int64($1)) }
            let values = cols.indices.map { i in
                table.keyIndexes.contains(i) ? "NEW.\(cols[i])" : "CASE WHEN \(changed(i)) THEN NEW.\(cols[i]) END"
            }.joined(separator: ", ")
            statements.append(
                """
                CREATE TRIGGER \(n[1]) AFTER UPDATE ON \(t) WHEN \(keySame) AND (\(anyChanged)) BEGIN
                  INSERT INTO \(target) VALUES (\(table.id), \(updateOp), \(keyMask) | \(mask), \(values));
                END
                """)
        }
        return statements
    }
}
