import Foundation
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
        ["insert", "update", "rekey", "delete", "displacing_insert", "displacing_update"].map {
            "\(Bookkeeping.prefix)\(table.id)_\($0)"
        }
    }

    /// Installs the triggers for `table`. `current` holds the SQL of the table's triggers that are
    /// there, by name: one whose text is already what `table` needs stays, every other is made
    /// anew or dropped (a column added to a table leaves its delete trigger as it was, a change of
    /// preserved columns the other three).
    /// `droppingUnusedScratch`: a unique index may be gone, and with it the need for the table's
    /// scratch table of displaced rows, which is then dropped (one no trigger names is harmless).
    static func install(
        _ table: TrackedTable, in db: Database, current: [String: String] = [:], droppingUnusedScratch: Bool = false
    ) throws {
        let wanted = try sql(for: table, in: db)
        if wanted.contains(where: { $0.name.hasSuffix("_displacing_insert") }) {
            try makeScratch(for: table, in: db)
        } else if droppingUnusedScratch {
            try db.execute(sql: "DROP TABLE IF EXISTS \(Bookkeeping.displacedTable(table))")
        }
        for name in names(for: table) where current[name] != nil && !wanted.contains(where: { $0.name == name }) {
            try db.execute(sql: "DROP TRIGGER \(name.quotedIdentifier)")
        }
        for (name, statement) in wanted where current[name] != statement {
            if current[name] != nil { try db.execute(sql: "DROP TRIGGER \(name.quotedIdentifier)") }
            try db.execute(sql: statement)
        }
    }

    /// The CREATE TRIGGER statements `table` needs, by trigger name, as its columns' declared
    /// types and its unique indexes in `db` make them.
    static func sql(for table: TrackedTable, in db: Database) throws -> [(name: String, sql: String)] {
        let affinities = try ColumnAffinity.of(table.columns, in: table.name, db)
        return sql(
            for: table,
            classChecked: Set(table.columns.indices.filter { keepsStorageClassOfEqualNumbers(affinities[$0]) }),
            nullableKeys: try nullableKeys(of: table, in: db), displaced: try DisplacedRows.of(table, in: db))
    }

    /// The columns a tombstone of `table` keeps (indexes into its columns, ascending): the key and
    /// the preserved columns.
    static func keptColumns(of table: TrackedTable) -> [Int] {
        let kept = Set(table.keyIndexes + table.preservedIndexes)
        return table.columns.indices.filter(kept.contains)
    }

    /// The statements that make `table`'s scratch table of displaced rows (`DisplacedRows`).
    static func scratchDDL(for table: TrackedTable) -> (table: String, index: String) {
        Bookkeeping.displacedTableDDL(table, kept: keptColumns(of: table))
    }

    /// Makes `table`'s scratch table of displaced rows as its triggers need it, or empties it: what
    /// it holds between statements is left by writes that kept the other row, and a row deleted
    /// meanwhile with capture paused (by an import) must not be taken for one displaced.
    private static func makeScratch(for table: TrackedTable, in db: Database) throws {
        let name = Bookkeeping.displacedTable(table)
        let present = try String.fetchOne(
            db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", arguments: [name])
        let ddl = scratchDDL(for: table)
        if present == ddl.table { return try db.execute(sql: "DELETE FROM \(name)") }
        if present != nil { try db.execute(sql: "DROP TABLE \(name)") }
        try db.execute(sql: ddl.table)
        try db.execute(sql: ddl.index)
    }

    /// Removes the triggers of `table` and its scratch table of displaced rows: it is no longer tracked.
    static func removeAll(_ table: TrackedTable, in db: Database) throws {
        try remove(table, in: db)
        try db.execute(sql: "DROP TABLE IF EXISTS \(Bookkeeping.displacedTable(table))")
    }

    /// The key columns (indexes into `columns`) that SQLite lets hold NULL: those of a rowid
    /// table not declared NOT NULL. (SQLite reports a WITHOUT ROWID table's key columns NOT NULL.)
    static func nullableKeys(of table: TrackedTable, in db: Database) throws -> Set<Int> {
        let nullable = Set(
            try String.fetchAll(
                db, sql: "SELECT name FROM pragma_table_info(?) WHERE pk > 0 AND \"notnull\" = 0",
                arguments: [table.name]))
        return Set(table.keyIndexes.filter { nullable.contains(table.columns[$0]) })
    }

    /// Whether a column of this declared type can hold an integer and a real that `IS` finds equal
    /// (1 and 1.0) as different values, so that a change between them is seen only by comparing
    /// `typeof` too. Only REAL affinity (every number stored as a real) and TEXT affinity (numbers
    /// turned into text) rule it out. INTEGER and NUMERIC affinity convert an integral real to an
    /// integer only strictly inside the 64-bit range, so -9223372036854775808.0 stays a real beside
    /// the equal integer; BLOB affinity and `ANY` keep the class as written. The type rules are
    /// SQLite's column affinity rules (datatype3.html §3.1).
    static func keepsStorageClassOfEqualNumbers(declaredType: String) -> Bool {
        keepsStorageClassOfEqualNumbers(ColumnAffinity(declaredType: declaredType))
    }

    static func keepsStorageClassOfEqualNumbers(_ affinity: ColumnAffinity) -> Bool {
        affinity != .real && affinity != .text
    }

    /// The column names the insert trigger's SQL of `table` gives `NEW` in the values it records,
    /// in order: the table's columns in slot order, as SQLite left them after renaming a column it
    /// names (it rewrites the trigger with the new name, quoted). Read from the recording of the
    /// insert on: what comes before it (the deletes of displaced rows) names the key too.
    static func insertedColumns(in sql: String, of table: TrackedTable) -> [String] {
        var names: [String] = []
        let recording = "VALUES (\(table.id), \(Bookkeeping.Op.insert.rawValue), "
        var rest = Substring(sql)
        if let start = rest.range(of: recording, options: .backwards) { rest = rest[start.upperBound...] }
        while let found = rest.range(of: "NEW.") {
            rest = rest[found.upperBound...]
            guard rest.first == "\"" else { continue }
            var name = ""
            var i = rest.index(after: rest.startIndex)
            while i < rest.endIndex {
                let c = rest[i]
                i = rest.index(after: i)
                if c == "\"" {
                    if i < rest.endIndex && rest[i] == "\"" {
                        name.append("\"")
                        i = rest.index(after: i)
                    } else {
                        break
                    }
                } else {
                    name.append(c)
                }
            }
            names.append(name)
            rest = rest[i...]
        }
        return names
    }

    /// Whether capture is paused (`paused`) as `db` sees the store. A store of an earlier build,
    /// opened read-only before its upgrade, has no switch.
    static func isPaused(_ db: Database) throws -> Bool {
        try db.tableExists(Bookkeeping.pausedTable)
            && Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(Bookkeeping.pausedTable))") == true
    }

    /// Turns capture back on where it was left paused outside an import (only another client can
    /// leave it so). Returns whether it was.
    static func resume(_ db: Database) throws -> Bool {
        guard try isPaused(db) else { return false }
        try db.execute(sql: "DELETE FROM \(Bookkeeping.pausedTable)")
        return true
    }

    /// What every capture trigger's `WHEN` requires: that capture is not paused (`paused`).
    static let running = "NOT EXISTS (SELECT 1 FROM \(Bookkeeping.pausedTable))"

    /// Runs `body` with capture paused, so that what it writes (an import's merge) is not captured
    /// as this replica's own changes. The triggers stay: one row in `Bookkeeping.pausedTable`
    /// turns them all off, written and deleted inside the caller's transaction, so that no other
    /// connection ever sees it and a crash rolls it back. The schema does not change, so no other
    /// connection parses it again, and the cost does not grow with the number of tracked tables.
    /// The scratch tables of displaced rows of `tables` are emptied first: a copy left by a write
    /// that kept the other row must not be taken for a row displaced, once the merge deleted it.
    static func paused<T>(_ tables: [TrackedTable], in db: Database, _ body: () throws -> T) throws -> T {
        let scratch = Set(
            try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'tidemark\\_displaced\\_%' ESCAPE '\\'"
            ))
        for table in tables where scratch.contains(Bookkeeping.displacedTable(table)) {
            try db.execute(sql: "DELETE FROM \(Bookkeeping.displacedTable(table))")
        }
        try db.execute(sql: "INSERT INTO \(Bookkeeping.pausedTable) VALUES (1)")
        do {
            let result = try body()
            try db.execute(sql: "DELETE FROM \(Bookkeeping.pausedTable)")
            return result
        } catch {
            // Whoever catches this and commits all the same must not be left with capture off.
            try? db.execute(sql: "DELETE FROM \(Bookkeeping.pausedTable)")
            throw error
        }
    }

    /// Removes the triggers for `table`.
    static func remove(_ table: TrackedTable, in db: Database) throws {
        for name in names(for: table) { try db.execute(sql: "DROP TRIGGER IF EXISTS \(name.quotedIdentifier)") }
    }

    /// The CREATE TRIGGER statements, by trigger name; `classChecked` holds the indexes of the columns that need
    /// their storage class compared besides their value. Long by design: it is the text of the
    /// three triggers, which reads best whole, beside each other.
    static func sql(
        for table: TrackedTable, classChecked: Set<Int>, nullableKeys: Set<Int>, displaced: DisplacedRows? = nil
    ) -> [(name: String, sql: String)] {
        let t = table.name.quotedIdentifier
        let names = names(for: table)
        let n = names.map(\.quotedIdentifier)
        let cols = table.columns.map(\.quotedIdentifier)
        let words = ColumnMask.wordCount(slots: table.slotCount)
        let maskColumns = (0..<words).map(Bookkeeping.maskColumn).joined(separator: ", ")
        let valueColumns = table.slots.map(Bookkeeping.valueColumn).joined(separator: ", ")
        let target = "tidemark_changes(table_id, op, \(maskColumns), \(valueColumns))"
        /// The mask words of a constant set of columns (indexes into `columns`), as SQL literals.
        let constant = { (indexes: [Int]) in ColumnMask(slots: indexes.map { table.slots[$0] }).sql(words: words) }
        let allMask = constant(Array(table.columns.indices))
        // `IS` compares numbers by value (1 IS 1.0), so where a column can keep both classes the
        // storage class is compared too: a change of class is a change of value for a replica that
        // keeps classes exactly.
        // Comparisons are BINARY: a column's collation (NOCASE, say) must not hide a change of case.
        let same = { (i: Int) in
            classChecked.contains(i)
                ? "(OLD.\(cols[i]) IS NEW.\(cols[i]) COLLATE BINARY AND typeof(OLD.\(cols[i])) = typeof(NEW.\(cols[i])))"
                : "(OLD.\(cols[i]) IS NEW.\(cols[i]) COLLATE BINARY)"
        }
        let changed = { (i: Int) in
            classChecked.contains(i)
                ? "(OLD.\(cols[i]) IS NOT NEW.\(cols[i]) COLLATE BINARY OR typeof(OLD.\(cols[i])) <> typeof(NEW.\(cols[i])))"
                : "(OLD.\(cols[i]) IS NOT NEW.\(cols[i]) COLLATE BINARY)"
        }
        let keySame = table.keyIndexes.map(same).joined(separator: " AND ")
        let keyDiffers = "NOT (\(keySame))"
        let nonKey = table.columns.indices.filter { !table.keyIndexes.contains($0) }

        // Delete tombstone: key and preserved columns from OLD, the others left NULL with their mask
        // bit clear. Naming only those, the delete trigger reads the same after a column is added.
        let keptIndexes = keptColumns(of: table)
        let tombstoneTarget =
            "tidemark_changes(table_id, op, \(maskColumns), "
            + "\(keptIndexes.map { Bookkeeping.valueColumn(table.slots[$0]) }.joined(separator: ", ")))"
        let tombstoneMask = constant(keptIndexes)
        let tombstoneValues = keptIndexes.map { "OLD.\(cols[$0])" }.joined(separator: ", ")
        // A row whose key is NULL could be told apart on no other replica: its insert, or a change
        // of its key to NULL, is refused, and the statement rolled back.
        // The message names no table: a rename would leave the old name in it.
        let refusal = "tidemark: a row of a tracked table needs a key; NULL cannot identify it on other replicas"
            .quotedLiteral
        // Where a key column keeps the class of equal numbers, SQLite takes the real 1.0 (or -0.0)
        // for the key 1 (or 0) already there, while replicas tell the two apart: such a key is
        // refused too.
        let integralReal =
            "tidemark: a key that is a real number equal to an integer is the same row as that integer to SQLite and another one to other replicas; write the integer"
            .quotedLiteral
        let insertValues = cols.indices.map { i in
            var value = "NEW.\(cols[i])"
            if table.keyIndexes.contains(i) && classChecked.contains(i) {
                value =
                    "CASE WHEN typeof(\(value)) = 'real' AND \(value) = CAST(\(value) AS INTEGER) THEN RAISE(ABORT, \(integralReal)) ELSE \(value) END"
            }
            return nullableKeys.contains(i) ? "coalesce(\(value), RAISE(ABORT, \(refusal)))" : value
        }.joined(separator: ", ")
        let insertOp = Bookkeeping.Op.insert.rawValue
        let updateOp = Bookkeeping.Op.update.rawValue
        let deleteOp = Bookkeeping.Op.delete.rawValue
        // A row that holds a NULL key all the same (written while the triggers were missing, or
        // kept by a migration that rebuilt its table) was never replicated: its update and delete
        // are not recorded, nor the end of its life when its key changes; a new key starts one.
        let keyed = nullableKeys.sorted().map { "OLD.\(cols[$0]) IS NOT NULL" }.joined(separator: " AND ")
        let tombstone =
            "INSERT INTO \(tombstoneTarget) VALUES (\(table.id), \(deleteOp), \(tombstoneMask), \(tombstoneValues));"
        let keyedTombstone =
            keyed.isEmpty
            ? tombstone
            : "INSERT INTO \(tombstoneTarget) SELECT \(table.id), \(deleteOp), \(tombstoneMask), \(tombstoneValues) WHERE \(keyed);"

        // Rows a REPLACE displaces through a unique index (`DisplacedRows`): copied by a BEFORE
        // trigger, tagged with the key of the row written; recorded deleted by that row's AFTER
        // trigger, before its own change, when they are gone. Writes nested between the two (a
        // foreign key's action, an app's trigger) touch only the copies tagged with their own row.
        var confirm = ""
        var forgetDisplaced = ""
        var displacing: [(name: String, sql: String)] = []
        if let displaced {
            let scratch = Bookkeeping.displacedTable(table)
            let copied = { (i: Int) in "d.\(Bookkeeping.valueColumn(table.slots[i]))" }
            let tag = table.keyIndexes.map { "b\(table.slots[$0])" }
            let tagged = zip(tag, table.keyIndexes).map { "\($0) = NEW.\(cols[$1])" }.joined(separator: " AND ")
            let gone = table.keyIndexes.map { "r.\(cols[$0]) IS \(copied($0))" }.joined(separator: " AND ")
            confirm = """
                INSERT INTO \(tombstoneTarget) SELECT \(table.id), \(deleteOp), \(tombstoneMask), \(keptIndexes.map(copied).joined(separator: ", "))
                    FROM \(scratch) AS d WHERE \(tagged) AND NOT EXISTS (SELECT 1 FROM \(t) AS r WHERE \(gone));
                  DELETE FROM \(scratch) WHERE \(tagged);

                """
            // A row deleted with its trigger fired (recursive triggers on, an app's trigger) has
            // its tombstone already.
            let victim = table.keyIndexes.map { "\(Bookkeeping.valueColumn(table.slots[$0])) = OLD.\(cols[$0])" }
                .joined(separator: " AND ")
            forgetDisplaced = "\n  DELETE FROM \(scratch) WHERE \(victim);"
            let same = { (row: String, other: String) in
                table.keyIndexes.map { "\(row).\(cols[$0]) IS \(other).\(cols[$0])" }.joined(separator: " AND ")
            }
            let conflict = displaced.conflict("r", with: "NEW")
            let victimKeyed = nullableKeys.sorted().map { " AND r.\(cols[$0]) IS NOT NULL" }.joined()
            let victims = { (excluding: [String]) in
                "FROM \(t) AS r WHERE (\(conflict))\(excluding.map { " AND NOT (\(same("r", $0)))" }.joined())\(victimKeyed)"
            }
            let scratchColumns = (keptIndexes.map { Bookkeeping.valueColumn(table.slots[$0]) } + tag)
                .joined(separator: ", ")
            let copy = { (excluding: [String]) in
                let values = keptIndexes.map { "r.\(cols[$0])" } + table.keyIndexes.map { "NEW.\(cols[$0])" }
                return """
                      INSERT OR REPLACE INTO \(scratch)(\(scratchColumns)) SELECT \(values.joined(separator: ", ")) \(victims(excluding));
                    """
            }
            displacing = [
                (
                    names[4],
                    """
                    CREATE TRIGGER \(n[4]) BEFORE INSERT ON \(t) WHEN \(running) AND EXISTS (SELECT 1 \(victims(["NEW"]))) BEGIN
                    \(copy(["NEW"]))
                    END
                    """
                ),
                (
                    names[5],
                    """
                    CREATE TRIGGER \(n[5]) BEFORE UPDATE ON \(t)
                      WHEN \(running) AND (\(displaced.changesIndexedValues())) AND EXISTS (SELECT 1 \(victims(["NEW", "OLD"]))) BEGIN
                    \(copy(["NEW", "OLD"]))
                    END
                    """
                ),
            ]
        }

        var statements = [
            """
            CREATE TRIGGER \(n[0]) AFTER INSERT ON \(t) WHEN \(running) BEGIN
              \(confirm)INSERT INTO \(target) VALUES (\(table.id), \(insertOp), \(allMask), \(insertValues));
            END
            """,
            """
            CREATE TRIGGER \(n[2]) AFTER UPDATE ON \(t) WHEN \(keyDiffers) AND \(running) BEGIN
              \(confirm)\(keyedTombstone)
              INSERT INTO \(target) VALUES (\(table.id), \(insertOp), \(allMask), \(insertValues));
            END
            """,
            """
            CREATE TRIGGER \(n[3]) AFTER DELETE ON \(t) WHEN \(keyed.isEmpty ? "" : "\(keyed) AND ")\(running) BEGIN
              \(tombstone)\(forgetDisplaced)
            END
            """,
        ]
        if !nonKey.isEmpty {
            let inWord = { (word: Int) in nonKey.filter { table.slots[$0] / ColumnMask.bitsPerWord == word } }
            // An OR chain is as deep as it is long, and SQLite limits an expression's depth (1000
            // by default): past one word, the columns of each word are ORed apart, then the words.
            let groups = (0..<words).map { inWord($0).map(changed).joined(separator: " OR ") }.filter { !$0.isEmpty }
            let anyChanged = groups.count == 1 ? groups[0] : groups.map { "(\($0))" }.joined(separator: " OR ")
            // One word per 63 slots: each changed column sets its slot's bit in its word.
            let mask = (0..<words).map { word -> String in
                let bits = inWord(word)
                    .map { "((\(changed($0))) << \(table.slots[$0] % ColumnMask.bitsPerWord))" }
                let keyBits = ColumnMask(slots: table.keyIndexes.map { table.slots[$0] }).words(count: words)[word]
                return ([String(keyBits)] + bits).joined(separator: " | ")
            }.joined(separator: ", ")
            let values = cols.indices.map { i in
                table.keyIndexes.contains(i) ? "NEW.\(cols[i])" : "CASE WHEN \(changed(i)) THEN NEW.\(cols[i]) END"
            }.joined(separator: ", ")
            // Whether capture runs is asked first: while an import's merge writes the table, the
            // comparison of every column is skipped. An update that records something asks it anyway.
            statements.append(
                """
                CREATE TRIGGER \(n[1]) AFTER UPDATE ON \(t) WHEN \(running) AND \(keyed.isEmpty ? "" : "\(keyed) AND ")\(keySame) AND (\(anyChanged)) BEGIN
                  \(confirm)INSERT INTO \(target) VALUES (\(table.id), \(updateOp), \(mask), \(values));
                END
                """)
        }
        return Array(zip([names[0], names[2], names[3], names[1]], statements)) + displacing
    }
}
