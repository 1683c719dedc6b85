import GRDB

// MARK: - Stores made by earlier builds

extension Bookkeeping {
    /// Whether `tidemark_tables` has slots (stores made before renames and drops lack them).
    static func hasSlots(_ db: Database) throws -> Bool {
        try db.columns(in: "tidemark_tables").contains { $0.name == "layout" }
    }

    /// Brings the bookkeeping of a store made by an earlier build up to date; each step is cheap
    /// and does nothing once done.
    static func upgrade(_ db: Database) throws {
        // Renaming a table makes SQLite check every view and trigger of the schema, and a broken
        // one of the app's (naming a table since dropped) would fail the upgrade: the legacy
        // rename checks nothing, and no view or trigger names the tables renamed here.
        let legacyRename = try Bool.fetchOne(db, sql: "PRAGMA legacy_alter_table") ?? false
        try db.execute(sql: "PRAGMA legacy_alter_table = ON")
        defer { if !legacyRename { try? db.execute(sql: "PRAGMA legacy_alter_table = OFF") } }
        try createAuthorship(db)
        try createRemoteFiles(db)
        try createCheckedFiles(db)
        if try !hasSlots(db) {
            // The registrations gain slots, and an untracked table's name may be tracked again.
            try addSharedClockWidth(db)
            try db.execute(sql: "ALTER TABLE tidemark_tables RENAME TO tidemark_tables_old")
            try db.execute(sql: tablesDDL)
            try db.execute(
                sql: """
                    INSERT INTO tidemark_tables(id, name, columns, key_columns, preserved, shared_width)
                    SELECT id, name, columns, key_columns, preserved, shared_width FROM tidemark_tables_old;
                    DROP TABLE tidemark_tables_old;
                    """)
        }
        for table in try String.fetchAll(db, sql: rowMetadataNamedCausalLength) {
            // The generation was once stored as `cl`, its other name (causal length).
            try db.execute(sql: "ALTER TABLE \(table.quotedDatabaseIdentifier) RENAME COLUMN cl TO gen")
        }
        if try !db.columns(in: "tidemark_transactions").contains(where: { $0.name == "schema" }) {
            try db.execute(sql: "ALTER TABLE tidemark_transactions ADD COLUMN schema INTEGER NOT NULL DEFAULT 0")
        }
        try createSchemas(db)
        try createDigests(db)
        try createTombstones(db)
        if try !db.columns(in: "tidemark_epochs").contains(where: { $0.name == "dropped" }) {
            try db.execute(sql: "ALTER TABLE tidemark_epochs ADD COLUMN dropped INTEGER NOT NULL DEFAULT 0")
        }
        if try !db.columns(in: "tidemark_watermarks").contains(where: { $0.name == "digest" }) {
            try db.execute(sql: "ALTER TABLE tidemark_watermarks ADD COLUMN digest BLOB")
            try db.execute(sql: "ALTER TABLE tidemark_watermarks ADD COLUMN digest_token TEXT")
        }
        for table in try String.fetchAll(db, sql: rowMetadataWithoutHash) {
            try db.execute(sql: "ALTER TABLE \(table.quotedDatabaseIdentifier) ADD COLUMN h INTEGER")
        }
        for table in try String.fetchAll(db, sql: rowMetadataWithClockColumns) {
            try packColumnClocks(db, table: table)
        }
        // A build that reads format 1 would misread the packed clocks: it refuses the store now.
        try setMeta(db, Meta.format, formatVersion)
        if try !db.columns(in: "tidemark_held").contains(where: { $0.name == "encrypted" }) {
            try db.execute(sql: "ALTER TABLE tidemark_held ADD COLUMN encrypted INTEGER NOT NULL DEFAULT 0")
        }
        if try !db.tableExists(settingsTable) {
            // Registered like the membership table of a new store; table ids stay local to a store.
            try createSettings(db)
            let id = try Int64.fetchOne(db, sql: "SELECT max(id) FROM tidemark_tables") ?? 0
            try Store.registerTable(
                try TrackedTable.describe(settingsTable, id: id + 1, preserving: [], in: db, allowReserved: true), db)
        }
    }

    /// Whether `upgrade` has anything to do.
    static func needsUpgrade(_ db: Database) throws -> Bool {
        try !db.tableExists("tidemark_authorship") || !db.tableExists("tidemark_schemas")
            || !db.tableExists("tidemark_held")
            || !hasSlots(db) || !db.tableExists(settingsTable) || !db.tableExists("tidemark_remote_files")
            || !db.tableExists("tidemark_checked_files")
            || !db.columns(in: "tidemark_held").contains { $0.name == "encrypted" }
            || String.fetchOne(db, sql: rowMetadataNamedCausalLength) != nil
            || !db.tableExists("tidemark_digests") || String.fetchOne(db, sql: rowMetadataWithoutHash) != nil
            || String.fetchOne(db, sql: rowMetadataWithClockColumns) != nil
            || Int.fromDatabaseValue(meta(db, Meta.format)) ?? 0 < formatVersion
            || !db.columns(in: "tidemark_watermarks").contains { $0.name == "digest" }
            || !db.tableExists("tidemark_epochs")
            || !db.columns(in: "tidemark_epochs").contains { $0.name == "dropped" }
    }

    /// The row-metadata tables made before rows had their hash `h`.
    private static let rowMetadataWithoutHash = """
        SELECT name FROM sqlite_schema
        WHERE type = 'table' AND name LIKE 'tidemark\\_rows\\_%' ESCAPE '\\' AND sql NOT LIKE '%, h INTEGER%'
        """

    /// The row-metadata tables made before their generation column was named `gen`.
    private static let rowMetadataNamedCausalLength = """
        SELECT name FROM sqlite_schema
        WHERE type = 'table' AND name LIKE 'tidemark\\_rows\\_%' ESCAPE '\\' AND sql LIKE '%cl INTEGER NOT NULL%'
        """

    /// The row-metadata tables made before per-column clocks were kept in one BLOB, `c`: they hold
    /// a pair of columns per slot, `t<slot>` and `o<slot>`.
    private static let rowMetadataWithClockColumns = """
        SELECT name FROM sqlite_schema
        WHERE type = 'table' AND name LIKE 'tidemark\\_rows\\_%' ESCAPE '\\' AND sql NOT LIKE '%, c BLOB,%'
        """

    /// Rewrites the row-metadata table `name`, made with a pair of clock columns per slot, in
    /// today's layout (`rowMetadataTable`): each row's clocks per column move into `c`
    /// (`ColumnClocks`), every other value is kept. A scan of the table, once.
    private static func packColumnClocks(_ db: Database, table name: String) throws {
        let columns = try db.columns(in: name).map(\.name)
        func numbered(_ prefix: Character) -> [Int] {
            columns.compactMap { $0.first == prefix ? Int($0.dropFirst()) : nil }.sorted()
        }
        let keys = numbered("k").map { "k\($0)" }
        let slots = numbered("t").filter { columns.contains("o\($0)") }
        let packed = "tidemark_rows_packing"
        try createRowMetadata(db, named: packed, keyCount: keys.count)
        let kept = (keys + ["gen", "t", "o", "h"] + (columns.contains("w") ? ["w"] : [])).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO \(packed)(\(kept)) SELECT \(kept) FROM \(name)")
        if !slots.isEmpty {
            // Only a live row without a shared clock has clocks per column.
            let clockColumns = slots.flatMap { ["t\($0)", "o\($0)"] }
            let read = try RawStatement(
                db,
                sql:
                    "SELECT \((keys + clockColumns).joined(separator: ", ")) FROM \(name) WHERE t IS NULL AND gen % 2 = 1"
            )
            let write = try RawStatement(
                db,
                sql:
                    "UPDATE \(packed) SET c = ? WHERE \(keys.enumerated().map { "\($1) = ?\($0 + 2)" }.joined(separator: " AND "))"
            )
            while try read.step() {
                var entries: [ColumnClocks.Entry] = []
                for (n, slot) in slots.enumerated() {
                    let at = Int32(keys.count + 2 * n)
                    guard let timestamp = read.optionalInt64(at), let origin = read.optionalInt64(at + 1) else {
                        continue
                    }
                    entries.append(.init(slot: slot, timestamp: timestamp, origin: origin))
                }
                guard !entries.isEmpty else { continue }
                write.reset()
                try write.bind(.blob(ColumnClocks.encode(entries)), at: 1)
                try write.bind(keys.indices.map { read.value(Int32($0)) }, from: 2)
                try write.execute()
            }
        }
        try db.execute(sql: "DROP TABLE \(name)")
        try db.execute(sql: "ALTER TABLE \(packed) RENAME TO \(name)")
    }
}
