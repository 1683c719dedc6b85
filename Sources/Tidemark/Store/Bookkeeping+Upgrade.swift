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
        // rename of a table checks nothing, and no view or trigger names the tables renamed here.
        // (Renaming a column checks them in either mode: no step renames one.)
        let legacyRename = try Bool.fetchOne(db, sql: "PRAGMA legacy_alter_table") ?? false
        try db.execute(sql: "PRAGMA legacy_alter_table = ON")
        defer { if !legacyRename { try? db.execute(sql: "PRAGMA legacy_alter_table = OFF") } }
        try createAuthorship(db)
        try createRemoteFiles(db)
        try createCheckedFiles(db)
        // Capture triggers made before read no switch; the store's open makes them again.
        try createPaused(db)
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
        if try !db.columns(in: "tidemark_watermarks").contains(where: { $0.name == "digest_schema" }) {
            // Digests kept before are compared as before, whatever schema they were made under.
            try db.execute(sql: "ALTER TABLE tidemark_watermarks ADD COLUMN digest_schema TEXT")
        }
        if try !db.columns(in: "tidemark_watermarks").contains(where: { $0.name == "signed_file" }) {
            // Watermarks read before are relayed once their members sign the next ones.
            try db.execute(sql: "ALTER TABLE tidemark_watermarks ADD COLUMN signed_file BLOB")
            try db.execute(sql: "ALTER TABLE tidemark_watermarks ADD COLUMN signed_file_token TEXT")
        }
        if try !db.columns(in: "tidemark_watermarks").contains(where: { $0.name == "signed_file_at" }) {
            try db.execute(sql: "ALTER TABLE tidemark_watermarks ADD COLUMN signed_file_at INTEGER")
        }
        for table in try String.fetchAll(db, sql: rowMetadataOfAnEarlierLayout) {
            try rewriteRowMetadata(db, table: table)
        }
        // A build that reads format 1 would misread the packed clocks: it refuses the store now.
        try setMeta(db, Meta.format, formatVersion)
        if try !db.columns(in: "tidemark_held").contains(where: { $0.name == "encrypted" }) {
            try db.execute(sql: "ALTER TABLE tidemark_held ADD COLUMN encrypted INTEGER NOT NULL DEFAULT 0")
        }
        if try !db.columns(in: "tidemark_peers").contains(where: { $0.name == "added_at" }) {
            // Peers trusted before count from the first prune that asks (`retireLagging`).
            try db.execute(sql: "ALTER TABLE tidemark_peers ADD COLUMN added_at INTEGER")
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
            || !db.tableExists("tidemark_checked_files") || !db.tableExists(pausedTable)
            || !db.columns(in: "tidemark_held").contains { $0.name == "encrypted" }
            || !db.tableExists("tidemark_digests") || String.fetchOne(db, sql: rowMetadataOfAnEarlierLayout) != nil
            || Int.fromDatabaseValue(meta(db, Meta.format)) ?? 0 < formatVersion
            || !db.columns(in: "tidemark_watermarks").contains { $0.name == "signed_file_at" }
            || !db.tableExists("tidemark_epochs")
            || !db.columns(in: "tidemark_epochs").contains { $0.name == "dropped" }
            || !db.columns(in: "tidemark_peers").contains { $0.name == "added_at" }
    }

    /// The row-metadata tables of an earlier layout (`createRowMetadata` makes today's): with a pair
    /// of clock columns per slot (`t<slot>`, `o<slot>`), without the row's hash `h`, or with the
    /// generation named `cl`, its other name (causal length).
    private static let rowMetadataOfAnEarlierLayout = """
        SELECT name FROM sqlite_schema
        WHERE type = 'table' AND name LIKE 'tidemark\\_rows\\_%' ESCAPE '\\'
            AND sql NOT LIKE '%, gen INTEGER NOT NULL, t INTEGER, o INTEGER, c BLOB, w INTEGER, h INTEGER, PRIMARY KEY(%'
        """

    /// Rewrites the row-metadata table `name`, of an earlier layout, in today's
    /// (`rowMetadataTable`): clocks per column move into `c` (`ColumnClocks`), a missing `h` or
    /// `w` is NULL (the next row digest counts the table again), and every other value is kept. A
    /// scan of the table, once. The rewritten table is renamed into place, which renames no column
    /// (SQLite checks every view and trigger when it renames one, and an app's broken view would
    /// fail it).
    private static func rewriteRowMetadata(_ db: Database, table name: String) throws {
        let columns = try db.columns(in: name).map(\.name)
        func numbered(_ prefix: Character) -> [Int] {
            columns.compactMap { $0.first == prefix ? Int($0.dropFirst()) : nil }.sorted()
        }
        func kept(_ column: String, from old: String? = nil) -> String {
            columns.contains(old ?? column) ? (old ?? column) : "NULL"
        }
        let keys = numbered("k").map { "k\($0)" }
        let slots = numbered("t").filter { columns.contains("o\($0)") }
        let rewritten = "tidemark_rows_rewriting"
        try createRowMetadata(db, named: rewritten, keyCount: keys.count)
        let generation = columns.contains("gen") ? "gen" : "cl"
        let targets = keys + ["gen", "t", "o", "c", "w", "h"]
        let sources = keys + [generation, kept("t"), kept("o"), kept("c"), kept("w"), kept("h")]
        try db.execute(
            sql:
                "INSERT INTO \(rewritten)(\(targets.joined(separator: ", "))) SELECT \(sources.joined(separator: ", ")) FROM \(name)"
        )
        if !slots.isEmpty {
            // Only a live row without a shared clock has clocks per column.
            let clockColumns = slots.flatMap { ["t\($0)", "o\($0)"] }
            let read = try RawStatement(
                db,
                sql:
                    "SELECT \((keys + clockColumns).joined(separator: ", ")) FROM \(name) WHERE t IS NULL AND \(generation) % 2 = 1"
            )
            let write = try RawStatement(
                db,
                sql:
                    "UPDATE \(rewritten) SET c = ? WHERE \(keys.enumerated().map { "\($1) = ?\($0 + 2)" }.joined(separator: " AND "))"
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
        try db.execute(sql: "ALTER TABLE \(rewritten) RENAME TO \(name)")
    }
}
