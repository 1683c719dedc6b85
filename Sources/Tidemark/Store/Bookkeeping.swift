import GRDB

/// Every bookkeeping table, index and name Tidemark keeps in a store, in one place.
///
/// All names start with `tidemark_`; the user's tables stay ordinary tables that any SQLite client
/// can read and write.
enum Bookkeeping {
    /// The reserved prefix of every bookkeeping object.
    static let prefix = "tidemark_"

    /// The store format this build writes and reads. A store with a higher number was made by a
    /// newer Tidemark and is refused rather than misread; one with a lower number is upgraded when
    /// opened (`upgrade`). 2: row metadata keeps clocks per column in one BLOB (`ColumnClocks`).
    /// 3: a folded change whose generation is its kind's default keeps NULL in
    /// `tidemark_changes.gen` (`Op.defaultGeneration`).
    static let formatVersion = 3

    /// Change kinds in `tidemark_changes.op`.
    enum Op: Int64 {
        /// Keeps the rowid sequence past pruned changes; never part of a transaction.
        case marker = 0
        case insert = 1
        case update = 2
        case delete = 3

        /// The generation a change of this kind leaves a row of the first life at, which the fold
        /// does not write into `tidemark_changes.gen`: most changes have it, and writing it
        /// rewrote every history row once more. NULL there means this default for a change of
        /// this replica's that the fold has passed, and "not yet known" for one it has not;
        /// changes of other origins keep the generation they came with.
        var defaultGeneration: Int64 { self == .delete ? 2 : 1 }
    }

    /// Value columns of `tidemark_changes` are named `c0`, `c1`, …: column `i` of a tracked table
    /// is stored in `c<i>`. They have no declared type, so SQLite keeps each value's storage class.
    static func valueColumn(_ index: Int) -> String { "c\(index)" }

    /// Mask columns of `tidemark_changes` (`ColumnMask`): `mask` holds slots 0 … 62, `mask1`
    /// slots 63 … 125, and so on; the ones past `mask` are added as a table needs them.
    static func maskColumn(_ word: Int) -> String { word == 0 ? "mask" : "mask\(word)" }

    /// The number of mask columns currently in `tidemark_changes`.
    static func maskColumnCount(_ db: Database) throws -> Int {
        try db.columns(in: "tidemark_changes").filter { isMaskColumn($0.name) }.count
    }

    /// Adds value and mask columns until `tidemark_changes` can hold a change of `table`.
    static func ensureChangeColumns(_ db: Database, for table: TrackedTable) throws {
        let names = try db.columns(in: "tidemark_changes").map(\.name)
        let values = names.filter(isValueColumn).count
        for i in values..<max(values, table.slotCount) {
            try db.execute(sql: "ALTER TABLE tidemark_changes ADD COLUMN \(valueColumn(i))")
        }
        let masks = names.filter(isMaskColumn).count
        for word in masks..<max(masks, ColumnMask.wordCount(slots: table.slotCount)) {
            try db.execute(sql: "ALTER TABLE tidemark_changes ADD COLUMN \(maskColumn(word)) INTEGER")
        }
    }

    private static func isMaskColumn(_ name: String) -> Bool { name.hasPrefix("mask") }
    private static func isValueColumn(_ name: String) -> Bool { name.hasPrefix("c") && Int(name.dropFirst()) != nil }

    /// The columns of `tidemark_changes` besides its value columns and the mask words past `mask`.
    static let changeColumnsBesideValues = 5

    /// The most slots a tracked table with a key of `keyCount` columns may have: SQLite limits a
    /// table's columns and a query's (2000 unless built otherwise), `tidemark_changes` holds a value
    /// column per slot and a mask word per 63, and a snapshot reads each row with its key again
    /// and its six columns of row metadata.
    static func maxTrackedColumns(_ db: Database, keyCount: Int) -> Int {
        var slots = db.columnLimit - changeColumnsBesideValues
        while slots + changeColumnsBesideValues + ColumnMask.wordCount(slots: slots) - 1 > db.columnLimit { slots -= 1 }
        return min(slots, db.columnLimit - 6 - keyCount)
    }

    /// Creates the bookkeeping tables in an empty store. Long by design: the DDL of every table is
    /// kept in one place, in one statement (STYLE: all bookkeeping DDL in one place).
    static func create(_ db: Database, valueColumns: Int) throws {
        let values = (0..<valueColumns).map { ", \(valueColumn($0))" }.joined()
        try db.execute(
            sql: """
                CREATE TABLE tidemark_meta(key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
                CREATE TABLE tidemark_state(
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    clock INTEGER NOT NULL,           -- last hybrid-logical-clock reading, packed
                    sequence INTEGER NOT NULL,        -- last sequence number this replica assigned
                    sealed_through INTEGER NOT NULL,  -- last change id that belongs to a transaction
                    folded_seq INTEGER NOT NULL       -- last own transaction folded into row metadata
                );
                INSERT INTO tidemark_state VALUES (1, 0, 0, 0, 0);
                \(tablesDDL)
                CREATE TABLE tidemark_changes(
                    id INTEGER PRIMARY KEY,
                    table_id INTEGER NOT NULL,
                    op INTEGER NOT NULL,
                    mask INTEGER NOT NULL,            -- bit i set: column i carries a value
                    gen INTEGER                       -- the row's causal length after the change; NULL until folded, or its kind's default
                    \(values)
                );
                CREATE TABLE tidemark_transactions(
                    id INTEGER PRIMARY KEY,           -- local order of arrival
                    replica BLOB NOT NULL,
                    seq INTEGER NOT NULL,
                    hlc INTEGER NOT NULL,
                    author TEXT,
                    context TEXT,
                    pid INTEGER,
                    first_change INTEGER NOT NULL,
                    last_change INTEGER NOT NULL,
                    chain BLOB,                       -- origin's chain hash after this transaction, once known
                    schema INTEGER NOT NULL DEFAULT 0, -- position of the schema version it was written under
                    UNIQUE(replica, seq)
                );
                CREATE INDEX tidemark_transactions_by_hlc ON tidemark_transactions(hlc);
                CREATE TABLE tidemark_replicas(
                    replica BLOB PRIMARY KEY NOT NULL,
                    max_seq INTEGER NOT NULL,         -- highest sequence number held or ever held
                    pruned_through INTEGER NOT NULL DEFAULT 0,
                    public_key BLOB,                  -- the origin's Ed25519 key, learned from bundles
                    head BLOB,                        -- chain hash after max_seq, once known
                    head_signature BLOB,              -- the origin's signature of that head
                    pruned_head BLOB                  -- chain hash after pruned_through
                ) WITHOUT ROWID;
                CREATE TABLE tidemark_watermarks(
                    replica BLOB PRIMARY KEY NOT NULL,
                    token TEXT NOT NULL,              -- the latest token the replica is known to hold, signed by it
                    signed_at INTEGER NOT NULL,       -- the replica's clock when it signed that token (packed)
                    digest BLOB,                      -- the row digest its latest watermark carried (RowDigest.bytes)
                    digest_token TEXT,                -- the token that digest describes
                    digest_schema TEXT,               -- the tables that watermark listed (Store.tablesFingerprint)
                    signed_file BLOB,                 -- its latest watermark file as read, relayed to folders it does not reach
                    signed_file_token TEXT,           -- the token that file says
                    signed_file_at INTEGER            -- when its replica signed that file (packed)
                ) WITHOUT ROWID;
                CREATE TABLE tidemark_folders(
                    path TEXT PRIMARY KEY NOT NULL,   -- exchange folders this replica has pushed to or pulled from
                    pushed_through TEXT,              -- per origin, how far this replica's bundles there carry its transactions
                    last_number INTEGER NOT NULL DEFAULT 0  -- its number: numbers are never reused, even after a prune
                ) WITHOUT ROWID;
                CREATE TABLE tidemark_origins(
                    id INTEGER PRIMARY KEY,           -- a small local number for a replica id, used in row metadata
                    replica BLOB NOT NULL UNIQUE
                );
                CREATE TABLE tidemark_conflicts(
                    id INTEGER PRIMARY KEY,
                    table_name TEXT NOT NULL,
                    key TEXT NOT NULL,                -- the row's key as a JSON object
                    generation INTEGER NOT NULL,      -- the causal length the resolution gave the row
                    kind TEXT NOT NULL,               -- unique, foreign_key, check, not_null, removed, remote, deleted
                    detail TEXT NOT NULL,
                    row TEXT NOT NULL,                -- the discarded values as a JSON object
                    detected INTEGER NOT NULL,        -- hybrid clock, packed
                    origin BLOB NOT NULL,             -- the replica that resolved it
                    UNIQUE(table_name, key, generation)
                );
                CREATE TABLE tidemark_peers(
                    public_key BLOB PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL UNIQUE,
                    added_at INTEGER                  -- wall clock (ms) when this replica began trusting it
                ) WITHOUT ROWID;
                """)
        try createAuthorship(db)
        try createSchemas(db)
        try createDigests(db)
        try createRemoteFiles(db)
        try createCheckedFiles(db)
        try createTombstones(db)
        try createPaused(db)
    }

    /// The registrations of tracked tables (`TrackedTable`), untracked ones included.
    static let tablesDDL = """
        CREATE TABLE tidemark_tables(
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            columns TEXT NOT NULL,            -- column names by slot, one per line (TrackedTable)
            key_columns TEXT NOT NULL,        -- slots of the key columns, comma-separated, key order
            preserved TEXT NOT NULL,          -- slots of the columns kept in tombstones
            shared_width INTEGER,             -- see TrackedTable.sharedClockWidth
            layout TEXT,                      -- slots of the live columns in table order; NULL: every slot, in order
            retired TEXT NOT NULL DEFAULT '', -- dropped columns, `slot:position`, comma-separated
            untracked INTEGER                 -- position of the schema version that untracked the table
        );
        CREATE UNIQUE INDEX tidemark_tables_by_name ON tidemark_tables(name) WHERE untracked IS NULL;
        """

    /// Each replicated table's row digest (`RowDigests`): the row count, the sum of the row hashes
    /// modulo 2^64 (as a signed integer), and how many rows the last count found without metadata.
    /// A table with no row here has no known digest.
    static func createDigests(_ db: Database) throws {
        try db.execute(
            sql: "CREATE TABLE IF NOT EXISTS tidemark_digests(table_id INTEGER PRIMARY KEY, "
                + "rows INTEGER NOT NULL, sum INTEGER NOT NULL, untracked INTEGER NOT NULL)")
    }

    /// When tombstones may be dropped (`Tombstones`): each prune closes the open epoch at this
    /// replica's token, and a tombstone saved in an epoch is stamped with its number (in `t`); the
    /// epoch dropped through stays, marked, so that a prune with nothing newer to drop reads no row
    /// metadata. Per table, `floor` is the greatest generation of a tombstone dropped or learned of
    /// from a snapshot: a row life started here where no metadata is left begins above it.
    static func createTombstones(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS tidemark_epochs(
                    epoch INTEGER PRIMARY KEY,        -- 1, 2, …: the open epoch is one past the last closed
                    token TEXT NOT NULL,              -- this replica's token when the epoch closed
                    dropped INTEGER NOT NULL DEFAULT 0 -- 1 once its tombstones and all earlier ones are dropped
                );
                CREATE TABLE IF NOT EXISTS tidemark_floors(
                    table_id INTEGER PRIMARY KEY,     -- tidemark_tables.id
                    floor INTEGER NOT NULL            -- even: the greatest generation forgotten
                );
                """)
    }

    /// The schema lineage (`SchemaLineage`) and the bundles held for a version not made here yet
    /// (`HeldBundles`; `encrypted` is 1 when the bundle came encrypted, Protocol/encryption.md §5.3).
    /// No comment follows the last column: SQLite edits this text when a column is added or dropped.
    static func createSchemas(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS tidemark_schemas(
                    position INTEGER PRIMARY KEY,     -- 1 for the first migration's version
                    id BLOB NOT NULL UNIQUE,          -- SHA-256 of the parent's id and the change (Protocol/schema.md §2)
                    change BLOB NOT NULL              -- the change, encoded as Protocol/schema.md §3
                );
                CREATE TABLE IF NOT EXISTS tidemark_held(
                    digest BLOB PRIMARY KEY NOT NULL, -- the bundle's digest
                    position INTEGER NOT NULL,        -- the newest schema version it needs
                    waiting_for BLOB NOT NULL,        -- that version's id
                    change BLOB NOT NULL,             -- that version's change
                    sender TEXT NOT NULL,
                    bundle BLOB NOT NULL,             -- the whole verified bundle (decrypted, when it came encrypted)
                    encrypted INTEGER NOT NULL DEFAULT 0
                ) WITHOUT ROWID;
                """)
    }

    /// The author, context name and process of captured changes not yet sealed, for writes an app
    /// made through its own writer with an author set (`WriterAuthorship`). Each row covers the
    /// contiguous change ids of one SQLite transaction; sealing turns it into one history
    /// transaction with that authorship, whichever process seals, and deletes it.
    static func createAuthorship(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS tidemark_authorship(
                    first_change INTEGER PRIMARY KEY,
                    last_change INTEGER NOT NULL,
                    author TEXT,
                    context TEXT,
                    pid INTEGER
                )
                """)
    }

    /// What this replica read of files of exchange folders on a server (`RemoteFiles`).
    static func createRemoteFiles(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS tidemark_remote_files(
                    location TEXT NOT NULL,           -- the exchange folder, as tidemark_folders records it
                    file TEXT NOT NULL,               -- the file's address
                    validator TEXT NOT NULL,          -- what the listing said of it when it was read
                    through TEXT NOT NULL,            -- its header's through token
                    PRIMARY KEY (location, file)
                ) WITHOUT ROWID
                """)
    }

    /// What this replica concluded about files of exchange folders (`CheckedFiles`).
    static func createCheckedFiles(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS tidemark_checked_files(
                    location TEXT NOT NULL,           -- the exchange folder, as tidemark_folders records it
                    folder TEXT NOT NULL,             -- the replica folder holding the file
                    name TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,        -- the state of the file the verdict holds for
                    verdict TEXT NOT NULL,            -- 'sound', or the warning given about it
                    PRIMARY KEY (location, folder, name)
                ) WITHOUT ROWID
                """)
    }

    /// Whether `tidemark_tables` has `shared_width` (stores made before migrations lack it).
    static func hasSharedClockWidth(_ db: Database) throws -> Bool {
        try db.columns(in: "tidemark_tables").contains { $0.name == "shared_width" }
    }

    /// Adds `shared_width` to the registrations of a store made before migrations.
    static func addSharedClockWidth(_ db: Database) throws {
        if try !hasSharedClockWidth(db) {
            try db.execute(sql: "ALTER TABLE tidemark_tables ADD COLUMN shared_width INTEGER")
        }
    }

    /// The number of `c<i>` value columns currently in `tidemark_changes`.
    static func valueColumnCount(_ db: Database) throws -> Int {
        try db.columns(in: "tidemark_changes").filter { isValueColumn($0.name) }.count
    }

    /// The row-metadata table of a tracked table (Protocol/merge.md §2): one row per identity seen,
    /// kept beside the rows and never pruned with history; a tombstone goes once every member has
    /// applied its delete (`Tombstones`). `k<i>` hold the key values in key order, `gen` the row's
    /// generation. Clocks are stored compactly: when every non-key column was set by the same
    /// write, `t`/`o` hold that one clock; otherwise `c` holds a clock per column (`ColumnClocks`).
    /// `t` is a packed hybrid timestamp and `o` the writer's number in `tidemark_origins`; a
    /// tombstone has no clock, and its `t` is the epoch it was saved in (`o` NULL). `w` is how many
    /// slots a row's shared clock covers once a migration added columns
    /// (`TrackedTable.sharedClockWidth`). `h` is the row's hash for the row digest
    /// (Protocol/exchange.md §8), NULL while the row is absent. No column depends on the table's
    /// columns, so a migration never alters it.
    static func rowMetadataTable(_ table: TrackedTable) -> String { "tidemark_rows_\(table.id)" }

    /// Creates the row-metadata table of `table`.
    static func createRowMetadata(_ db: Database, for table: TrackedTable) throws {
        try createRowMetadata(db, named: rowMetadataTable(table), keyCount: table.keyIndexes.count)
    }

    /// Creates a row-metadata table named `name` for a key of `keyCount` columns.
    static func createRowMetadata(_ db: Database, named name: String, keyCount: Int) throws {
        let keys = (0..<keyCount).map { "k\($0)" }
        let columns = keys + ["gen INTEGER NOT NULL", "t INTEGER", "o INTEGER", "c BLOB", "w INTEGER", "h INTEGER"]
        try db.execute(
            sql:
                "CREATE TABLE \(name)(\(columns.joined(separator: ", ")), PRIMARY KEY(\(keys.joined(separator: ", ")))) WITHOUT ROWID"
        )
    }

    /// The scratch table of `table`'s rows that an insert or update under way may displace
    /// (`DisplacedRows`): per row, what its tombstone keeps (the key, then the preserved columns,
    /// named `c<slot>` as in `tidemark_changes`), and the key of the row being written that may
    /// displace it (`b<slot>`, indexed). Between statements it holds nothing that matters, and is
    /// emptied whenever the triggers are made again. Never part of history.
    static func displacedTable(_ table: TrackedTable) -> String { "tidemark_displaced_\(table.id)" }

    /// The CREATE TABLE and CREATE INDEX statements of `table`'s scratch table of displaced rows,
    /// for the columns a tombstone keeps (`kept`, indexes into its columns).
    static func displacedTableDDL(_ table: TrackedTable, kept: [Int]) -> (table: String, index: String) {
        let name = displacedTable(table)
        let keys = table.keyIndexes.map { valueColumn(table.slots[$0]) }
        let by = table.keyIndexes.map { "b\(table.slots[$0])" }
        let columns = kept.map { valueColumn(table.slots[$0]) } + by
        return (
            "CREATE TABLE \(name)(\(columns.joined(separator: ", ")), PRIMARY KEY(\(keys.joined(separator: ", "))))",
            "CREATE INDEX \(name)_by ON \(name)(\(by.joined(separator: ", ")))"
        )
    }

    /// The switch that pauses capture (`CaptureTriggers.paused`): every capture trigger fires only
    /// while this table is empty. An import writes its one row before it merges and deletes it
    /// before it commits, so that no other connection ever sees it; a crash rolls it back.
    static let pausedTable = "tidemark_paused"

    /// Creates the switch that pauses capture.
    static func createPaused(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS tidemark_paused(id INTEGER PRIMARY KEY CHECK (id = 1))")
    }

    /// The replicated membership table: one row per member, `retired` 1 once a replica retired it.
    /// It is tracked like a user table, so retirements travel in bundles, signed and merged by the
    /// same rules (a later rejoin wins over an earlier retirement).
    static let membersTable = "tidemark_members"

    /// Creates the membership table.
    static func createMembers(_ db: Database) throws {
        try db.execute(
            sql: "CREATE TABLE tidemark_members(id TEXT PRIMARY KEY NOT NULL, retired INTEGER NOT NULL DEFAULT 0)")
    }

    /// The replicated group settings: one row per setting, tracked like the membership table so a
    /// setting is a signed write every member merges by the same rules. Only `encryption` today
    /// (Protocol/encryption.md §1).
    static let settingsTable = "tidemark_settings"

    /// Creates the settings table.
    static func createSettings(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE tidemark_settings(name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)")
    }

    /// Whether `db` holds Tidemark bookkeeping.
    static func isInitialized(_ db: Database) throws -> Bool {
        // An app's table that happens to have the name is not Tidemark's (`init` refuses it).
        try db.tableExists("tidemark_meta") && db.tableExists("tidemark_tables")
            && Set(try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('tidemark_meta')"))
                .isSuperset(of: ["key", "value"])
    }
}
