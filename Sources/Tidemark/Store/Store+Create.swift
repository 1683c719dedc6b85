import Crypto
import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// What `sync init` asks for.
    public struct Setup: Sendable {
        /// The replica's human name.
        public var replicaName: String
        /// A schema script to run first: its file name (for messages) and SQL.
        public var schema: (file: String, sql: String)?
        /// Tables to track; when empty, every table but SQLite's and GRDB's own (`grdb_`). A
        /// database with a table whose name begins with `tidemark_` is refused: the prefix is
        /// reserved.
        public var tables: [String]
        /// `TABLE.COLUMN` pairs whose last values a delete's tombstone keeps.
        public var preserve: [String]
        /// The private key file; `STORE.key` when nil.
        public var keyPath: String?

        /// Creates a setup.
        public init(
            replicaName: String, schema: (file: String, sql: String)? = nil, tables: [String] = [],
            preserve: [String] = [],
            keyPath: String? = nil
        ) {
            self.replicaName = replicaName
            self.schema = schema
            self.tables = tables
            self.preserve = preserve
            self.keyPath = keyPath
        }
    }

    /// Creates a store at `path` (or adopts the SQLite database there), runs the schema, and starts
    /// tracking. Rows already in adopted tables are recorded as one first transaction (context name
    /// `adopt`), so peers receive them. On any error the file is left exactly as it was.
    ///
    /// Re-running on an initialized store succeeds only if nothing would change; `created` tells
    /// which happened.
    public static func initialize(_ path: String, setup: Setup, options: Options = Options()) throws -> (
        store: Store, created: Bool
    ) {
        try checkReplicaName(setup.replicaName)
        let existed = FileManager.default.fileExists(atPath: path)
        do {
            let database = try StoreConnection.open(path, busyTimeout: options.busyTimeout, create: true)
            let result = try initialize(database, path: path, setup: setup, options: options, attached: false)
            if result.created {
                try database.writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA journal_mode = WAL")
                    try db.execute(sql: "PRAGMA synchronous = NORMAL")
                }
            }
            return result
        } catch {
            if !existed {
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    try? FileManager.default.removeItem(atPath: path + suffix)
                }
            }
            if let error = error as? StoreError { throw error }
            throw StoreConnection.mapped(error, path: path)
        }
    }

    /// Creates a store in the app's own database, or adopts the tables already there, and attaches
    /// to it: every read and write of the store goes through `writer`. Rows already in the tables
    /// are recorded as one first transaction (context name `adopt`). The key file defaults to
    /// `PATH.key` beside the database file; an in-memory database, or one opened by a URI
    /// filename, needs `setup.keyPath`.
    ///
    /// Run it after the app's own migrations have created its tables. It changes nothing when the
    /// store is already initialized as `setup` asks; on any error the database is left as it was.
    /// The journal mode stays the app's choice: a `DatabasePool` (WAL) lets readers read during a pull.
    public static func initialize(in writer: some DatabaseWriter, setup: Setup, options: Options = Options()) throws
        -> (
            store: Store, created: Bool
        )
    {
        try checkReplicaName(setup.replicaName)
        do {
            return try initialize(writer, path: writer.path, setup: setup, options: options, attached: true)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreConnection.mapped(error, path: writer.path)
        }
    }

    private static func checkReplicaName(_ name: String) throws {
        guard name.range(of: "^[A-Za-z0-9._-]{1,64}$", options: .regularExpression) != nil else {
            throw StoreError.invalidReplicaName(name)
        }
    }

    /// Creates the bookkeeping and starts tracking in one SQLite transaction through `database`.
    private static func initialize(
        _ database: any DatabaseWriter, path: String, setup: Setup, options: Options, attached: Bool
    ) throws -> (store: Store, created: Bool) {
        let initialized = try database.read { db in try Bookkeeping.isInitialized(db) }
        if initialized {
            let store = try Store.load(path: path, database: database, attached: attached, options: options)
            try store.checkUnchanged(by: setup)
            return (store, false)
        }
        guard let keyPath = setup.keyPath ?? (Store.isFileBacked(path) ? KeyFile.defaultPath(forStore: path) : nil)
        else {
            throw StoreError.keyFile(
                path: path,
                problem:
                    "an in-memory database, or one opened by a URI filename, has no place for a key file beside it; set Setup.keyPath"
            )
        }
        var createdKey = false
        do {
            let key: KeyFile
            do {
                key = try KeyFile.create(keyPath)
                createdKey = true
            } catch StoreError.keyFile(_, KeyFile.keyFileExists) {
                key = try KeyFile.load(keyPath)
            }
            // Another process (an app and its extension, launched together) may have initialized
            // the store since it was looked at: then this one opens it as it is.
            let created = try database.writeWithoutTransaction { db -> Bool in
                var created = false
                try db.inTransaction(.immediate) {
                    guard try !Bookkeeping.isInitialized(db) else { return .rollback }
                    try createBookkeeping(db, setup: setup, key: key, path: path, options: options)
                    created = true
                    return .commit
                }
                return created
            }
            // From here the key is the store's (or the key file was there for another one): kept.
            createdKey = false
            let store = try Store.load(path: path, database: database, attached: attached, options: options)
            if !created { try store.checkUnchanged(by: setup) }
            return (store, created)
        } catch {
            if createdKey { try? FileManager.default.removeItem(atPath: keyPath) }
            throw error
        }
    }

    /// Runs the schema, registers the tables, creates bookkeeping and triggers, and records the
    /// rows already there as the first transaction.
    private static func createBookkeeping(_ db: Database, setup: Setup, key: KeyFile, path: String, options: Options)
        throws
    {
        try runSchema(setup.schema, in: db)
        var tables = try plannedTables(setup, in: db, path: path)
        // Only for tables about to be tracked: a store opened again keeps what it tracks.
        for table in tables { try TrackedTable.checkKeys(of: table, in: db) }
        try Bookkeeping.createMembers(db)
        try Bookkeeping.createSettings(db)
        for name in [Bookkeeping.membersTable, Bookkeeping.settingsTable] {
            tables.append(
                try TrackedTable.describe(
                    name, id: Int64(tables.count + 1), preserving: [], in: db, allowReserved: true))
        }
        try Bookkeeping.create(db, valueColumns: tables.map(\.columns.count).max() ?? 0)
        try Bookkeeping.setMeta(db, Bookkeeping.Meta.format, Bookkeeping.formatVersion)
        try Bookkeeping.setMeta(db, Bookkeeping.Meta.replicaName, setup.replicaName)
        try Bookkeeping.setMeta(db, Bookkeeping.Meta.setup, setupFingerprint(setup))
        try Bookkeeping.setMeta(db, Bookkeeping.Meta.publicKey, Data(key.publicKey))
        for table in tables {
            try registerTable(table, db)
            try adoptRows(of: table, in: db)
        }
        _ = try Sealer.seal(
            db, replica: Replica.ID(publicKey: key.publicKey), clock: options.clock,
            as: .adoption(processID: options.processID))
    }

    /// Registers `table` and gives it its row metadata, change columns and capture triggers.
    static func registerTable(_ table: TrackedTable, _ db: Database) throws {
        try table.insert(db)
        try Bookkeeping.createRowMetadata(db, for: table)
        try Bookkeeping.ensureChangeColumns(db, for: table)
        try CaptureTriggers.install(table, in: db)
    }

    /// Whether `path` names a file a key file can be put beside: not an in-memory or temporary
    /// database, nor a URI filename (`file:…`), which GRDB's named in-memory databases are
    /// (`file:NAME?mode=memory&cache=shared`) and whose text is no path.
    static func isFileBacked(_ path: String) -> Bool {
        !path.isEmpty && path != ":memory:" && !path.hasPrefix("file:")
    }

    /// Runs a schema script statement by statement, skipping its own transaction control (so a
    /// `sqlite3 .dump` file works) and naming the file in any error.
    static func runSchema(_ schema: (file: String, sql: String)?, in db: Database) throws {
        guard let schema else { return }
        do {
            let statements = try db.allStatements(sql: schema.sql)
            while let statement = try statements.next() {
                if statement.isTransactionControl { continue }
                try statement.execute()
            }
        } catch let error as DatabaseError {
            throw StoreError.schemaFailed(file: schema.file, message: error.message ?? "\(error.resultCode)")
        }
    }

    /// The registrations `setup` asks for, validated against the database.
    static func plannedTables(_ setup: Setup, in db: Database, path: String) throws -> [TrackedTable] {
        // Before the bookkeeping is made, a table with Tidemark's prefix is the app's: left out of
        // every table without a word its rows would silently stay on this device, and one named
        // as Tidemark's own tables are would stop the store being made.
        if try !Bookkeeping.isInitialized(db),
            let reserved = try String.fetchOne(
                db,
                sql: """
                    SELECT name FROM pragma_table_list
                    WHERE schema = 'main' AND type = 'table' AND name LIKE 'tidemark\\_%' ESCAPE '\\'
                    ORDER BY name
                    """)
        {
            throw StoreError.untrackableTable(
                reserved, reason: "names beginning with 'tidemark_' are reserved for Tidemark's bookkeeping",
                hint: "rename the table")
        }
        var names = try setup.tables.map { try TrackedTable.spelling(of: $0, in: db) ?? $0 }
        if names.isEmpty {
            names = try String.fetchAll(
                db,
                sql: """
                    SELECT name FROM pragma_table_list
                    WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                      AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\' AND name NOT LIKE 'grdb\\_%' ESCAPE '\\'
                    ORDER BY name
                    """)
            guard !names.isEmpty else { throw StoreError.nothingToTrack(path: path) }
        }
        var preserve: [String: [String]] = [:]
        for argument in setup.preserve {
            let parts = argument.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw StoreError.invalidPreserve(argument, reason: "expected TABLE.COLUMN")
            }
            guard let table = try TrackedTable.spelling(of: parts[0], in: db) else {
                throw StoreError.unknownTable(parts[0])
            }
            guard names.contains(table) else {
                throw StoreError.invalidPreserve(argument, reason: "table '\(parts[0])' is not tracked")
            }
            preserve[table, default: []].append(parts[1])
        }
        var seen = Set<String>()
        return try names.filter { seen.insert($0).inserted }.enumerated().map { offset, name in
            try TrackedTable.describe(name, id: Int64(offset + 1), preserving: preserve[name] ?? [], in: db)
        }
    }

    /// Records the rows already in a newly tracked table as inserts.
    static func adoptRows(of table: TrackedTable, in db: Database) throws {
        let valueColumns = table.slots.map(Bookkeeping.valueColumn).joined(separator: ", ")
        let columns = table.columns.map(\.quotedIdentifier).joined(separator: ", ")
        let words = ColumnMask.wordCount(slots: table.slotCount)
        let masks = (0..<words).map(Bookkeeping.maskColumn).joined(separator: ", ")
        let allMask = ColumnMask(slots: table.slots).sql(words: words)
        try db.execute(
            sql: """
                INSERT INTO tidemark_changes(table_id, op, \(masks), \(valueColumns))
                SELECT \(table.id), \(Bookkeeping.Op.insert.rawValue), \(allMask), \(columns)
                FROM \(table.name.quotedIdentifier)
                """)
    }

    /// Records, as one update per row and column, the values rows of `table` hold in `columns`,
    /// which another client added, other than the column's default (NULL when it has none), for
    /// the rows row metadata holds alive (the caller folds first):
    /// every replica that adds the column gets that, and a write made before the capture triggers
    /// knew the column gets recorded.
    static func adoptValues(of table: TrackedTable, columns: [String], in db: Database) throws {
        let defaults = Dictionary(
            try Row.fetchAll(db, sql: "SELECT name, dflt_value FROM pragma_table_info(?)", arguments: [table.name])
                .map { ($0[0] as String, $0[1] as String?) }, uniquingKeysWith: { first, _ in first })
        let words = ColumnMask.wordCount(slots: table.slotCount)
        let masks = (0..<words).map(Bookkeeping.maskColumn).joined(separator: ", ")
        let affinities = try ColumnAffinity.of(table.columns, in: table.name, db)
        // Only rows this replica's history holds alive (the caller folded every captured change):
        // a row written while the triggers were missing is not replicated, and an update of it
        // alone would reach peers as a row of that one column.
        let keyMatch = table.keyIndexes.enumerated().map {
            "m.k\($0.offset) = row.\(table.columns[$0.element].quotedIdentifier)"
        }
        let known =
            "EXISTS (SELECT 1 FROM \(Bookkeeping.rowMetadataTable(table)) AS m WHERE \(keyMatch.joined(separator: " AND ")) AND m.gen % 2 = 1)"
        for column in columns {
            guard let index = table.index(of: column) else { continue }
            let written = table.keyIndexes + [index]
            let valueColumns = written.map { Bookkeeping.valueColumn(table.slots[$0]) }.joined(separator: ", ")
            let selected = written.map { table.columns[$0].quotedIdentifier }.joined(separator: ", ")
            let name = column.quotedIdentifier
            // What adding the column gives every row: its default, or NULL without one.
            let added = (defaults[column] ?? nil).map { "(\($0))" } ?? "NULL"
            // A column without affinity keeps the class a value was written with: 0.0 is not the
            // default 0, though `IS` finds them equal (Protocol/exchange.md §8.1). The rows that
            // predate the column read an integral real default as an integer, as on every replica.
            let predating =
                "CASE WHEN typeof(\(added)) = 'real' AND \(added) = CAST(\(added) AS INTEGER) THEN 'integer' ELSE typeof(\(added)) END"
            let differs =
                affinities[index] == .blob
                ? "(\(name) IS NOT \(added) COLLATE BINARY OR typeof(\(name)) <> \(predating))"
                : "\(name) IS NOT \(added) COLLATE BINARY"
            try db.execute(
                sql: """
                    INSERT INTO tidemark_changes(table_id, op, \(masks), \(valueColumns))
                    SELECT \(table.id), \(Bookkeeping.Op.update.rawValue), \(ColumnMask(slots: written.map { table.slots[$0] }).sql(words: words)), \(selected)
                    FROM \(table.name.quotedIdentifier) AS row WHERE \(differs) AND \(known)
                    """)
        }
    }

    /// What `setup` asks to track, as kept when it creates a store: the schema script's SHA-256,
    /// the tables it names (or every table) and the preserved columns, in SQLite's letter case for
    /// names, in any order.
    static func setupFingerprint(_ setup: Setup) -> String {
        let schema = setup.schema.map { ["schema " + HexCoding.encode(Array(SHA256.hash(data: Data($0.sql.utf8))))] }
        let tables = setup.tables.isEmpty ? ["*"] : Set(setup.tables.map(TrackedTable.folded)).sorted()
        let preserve = Set(setup.preserve.map(TrackedTable.folded)).sorted()
        return ((schema ?? []) + tables.map { "table \($0)" } + preserve.map { "preserve \($0)" })
            .joined(separator: "\n")
    }

    /// Throws `alreadyInitialized` unless `setup` asks for what this store was created with, or for
    /// exactly what it is now. Migrations since (`migrate`, or a schema change adopted) and tables
    /// the app created without tracking them change neither: an app initializes at every launch with
    /// the setup of its first release, and a script runs the same `init` before its `migrate`. A
    /// store made by an earlier build, which did not keep its setup, is compared with what it is now
    /// until it has made a schema version.
    func checkUnchanged(by setup: Setup) throws {
        if setup.replicaName != replica.name {
            throw StoreError.alreadyInitialized(
                path: path, difference: "it is replica '\(replica.name)', not '\(setup.replicaName)'")
        }
        let asCreated = try database.read { db in
            let created = String.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.setup))
            if created == Self.setupFingerprint(setup) { return true }
            return try created == nil && !SchemaLineage.fetch(db).isEmpty
        }
        if asCreated { return }
        if let schema = setup.schema, try !schemaIsPresent(schema) {
            throw StoreError.alreadyInitialized(
                path: path, difference: "the schema file defines objects the store lacks or has in another form")
        }
        try database.read { db in
            var wanted = try Self.plannedTables(setup, in: db, path: path)
            for i in wanted.indices { wanted[i].id = trackedTable(named: wanted[i].name)?.id ?? -1 }
            let user = trackedTables
            if Set(wanted) != Set(user) {
                let have = user.map(\.name).joined(separator: ", ")
                throw StoreError.alreadyInitialized(
                    path: path, difference: "it tracks (\(have)) with other settings than the ones given")
            }
        }
    }

    /// Whether every table, index, view and trigger the schema script defines already exists in
    /// the store with the same definition. The script runs in a scratch in-memory database, so a
    /// script of plain CREATE statements can be given again to an initialized store.
    func schemaIsPresent(_ schema: (file: String, sql: String)) throws -> Bool {
        let scratch = try DatabaseQueue()
        let defined = try scratch.write { db -> [String: String] in
            try Self.runSchema(schema, in: db)
            return try Self.schemaObjects(db)
        }
        let present = try database.read { db in try Self.schemaObjects(db) }
        return defined.allSatisfy { present[$0.key] == $0.value }
    }

    /// User schema objects by "type name", with their SQL normalized for whitespace.
    static func schemaObjects(_ db: Database) throws -> [String: String] {
        var objects: [String: String] = [:]
        for row in try Row.fetchAll(
            db,
            sql:
                "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\'"
        ) {
            let sql: String = row["sql"] ?? ""
            objects["\(row["type"] as String) \(row["name"] as String)"] = sql.split(whereSeparator: \.isWhitespace)
                .joined(separator: " ")
        }
        return objects
    }
}
