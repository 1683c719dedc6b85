import GRDB

/// Watches SQL that `Store.execute` runs for the app, statement by statement, for schema changes
/// tracking cannot follow: any that changes a tracked table (that is a migration), and any that
/// touches Tidemark's own objects (a capture trigger dropped and made again around a write, a
/// trigger on `tidemark_changes` that throws captured changes away). Each is refused after the
/// statement that made it, inside the transaction, so nothing of the SQL is applied.
///
/// A schema change is told by SQLite's schema cookies (main and temp), whatever the statement's
/// text; the SQL runs with SQLite's defensive flag on, which refuses the ways around them
/// (`PRAGMA writable_schema`, `PRAGMA schema_version =`).
struct SchemaWatch {
    let db: Database
    let tables: [TrackedTable]
    private var cookies: [Int]
    /// Tidemark's objects as they were before the first schema change, once there was one.
    private var bookkeeping: [String: String]?
    /// The app's indexes and triggers on tracked tables, as they were before the last schema
    /// change: the only objects besides the tables that decide what the capture triggers must be.
    private var dependents: [String: String] = [:]
    /// Whether the kept row digests could be vouched for before the first schema change.
    private var digestsTrusted = false
    /// Whether a statement changed the schema.
    private var changed = false

    init(db: Database, tables: [TrackedTable]) throws {
        self.db = db
        self.tables = tables
        cookies = try Self.cookies(db)
    }

    /// Call before each statement. A statement that writes and names a `tidemark_` object is
    /// refused before it runs: the app's SQL may read Tidemark's tables, never write them. Before
    /// the first statement that changes the schema (by its first keyword), takes note of Tidemark's
    /// objects; the many that only write rows cost no read of the schema.
    mutating func willRun(_ statement: Statement) throws {
        guard !statement.isReadonly else { return }
        if let name = Self.bookkeepingName(in: statement.sql) {
            throw StoreError.bookkeepingChanged(statement: statement.sql, object: name)
        }
        guard bookkeeping == nil, Self.changesSchema(statement) else { return }
        bookkeeping = try Self.objects(db)
        dependents = try Self.dependents(of: tables, db)
        digestsTrusted = try RowDigests.trusted(db)
    }

    /// The first keywords of the statements that change the schema (ANALYZE makes `sqlite_stat1`).
    private static let schemaKeywords: Set = ["CREATE", "ALTER", "DROP", "ANALYZE"]

    /// Whether `statement` changes the schema, by its first keyword.
    static func changesSchema(_ statement: Statement) -> Bool { schemaKeywords.contains(statement.leadingKeyword) }

    /// The first `tidemark_…` name `sql` mentions outside its comments and string literals: bare,
    /// quoted (`"…"`, `` `…` ``, `[…]`), or as a single-quoted string that is a whole name, which
    /// SQLite takes for a name where one goes (`DELETE FROM 'tidemark_changes'`).
    static func bookkeepingName(in sql: String) -> String? {
        let text = Array(sql.utf8)
        let prefix = Array(Bookkeeping.prefix.utf8)
        /// Whether `c` can continue a name: a letter, a digit, `_`, `$`, or a byte of a non-ASCII
        /// character, as SQLite's tokenizer has it.
        func isNamePart(_ c: UInt8) -> Bool {
            c == UInt8(ascii: "_") || c == UInt8(ascii: "$") || (0x30...0x39).contains(c)
                || (0x61...0x7a).contains(c | 0x20) || c >= 0x80
        }
        func hasPrefix(_ bytes: ArraySlice<UInt8>) -> Bool {
            bytes.count >= prefix.count && zip(bytes.prefix(prefix.count), prefix).allSatisfy { $0 | 0x20 == $1 | 0x20 }
        }
        var i = 0
        while i < text.count {
            let c = text[i]
            let next = i + 1 < text.count ? text[i + 1] : 0
            if c == UInt8(ascii: "'") || c == UInt8(ascii: "\"") || c == UInt8(ascii: "`") || c == UInt8(ascii: "[") {
                // Quoted up to the closing quote; a doubled one is an escape, except in […].
                let close = c == UInt8(ascii: "[") ? UInt8(ascii: "]") : c
                var content: [UInt8] = []
                i += 1
                while i < text.count {
                    if text[i] == close {
                        guard c != UInt8(ascii: "["), i + 1 < text.count, text[i + 1] == close else { break }
                        i += 1
                    }
                    content.append(text[i])
                    i += 1
                }
                i += 1
                if hasPrefix(content[...]), c != UInt8(ascii: "'") || content.allSatisfy(isNamePart) {
                    return String(decoding: content, as: UTF8.self)
                }
            } else if c == UInt8(ascii: "-"), next == UInt8(ascii: "-") {
                while i < text.count, text[i] != UInt8(ascii: "\n") { i += 1 }
            } else if c == UInt8(ascii: "/"), next == UInt8(ascii: "*") {
                i += 2
                while i + 1 < text.count, !(text[i] == UInt8(ascii: "*") && text[i + 1] == UInt8(ascii: "/")) { i += 1 }
                i += 2
            } else if i == 0
                || !(isNamePart(text[i - 1]) || text[i - 1] == UInt8(ascii: ":") || text[i - 1] == UInt8(ascii: "@")),
                hasPrefix(text[i...])
            {
                // A bare name (not a parameter such as :tidemark_id).
                var end = i + prefix.count
                while end < text.count, isNamePart(text[end]) { end += 1 }
                return String(decoding: text[i..<end], as: UTF8.self)
            } else {
                i += 1
            }
        }
        return nil
    }

    /// Refuses `statement`, which just ran, when it changed a tracked table or Tidemark's objects.
    mutating func didRun(_ statement: Statement) throws {
        let now = try Self.cookies(db)
        guard now != cookies else { return }
        cookies = now
        changed = true
        for table in tables where try !table.hasRegisteredShape(in: db) {
            throw StoreError.schemaChangeNeedsMigration(statement: statement.sql)
        }
        // Any other statement that changed the schema was not foreseen: with nothing noted
        // before it, every object counts as changed, and it is refused.
        if let changed = Self.firstChanged(before: bookkeeping ?? [:], after: try Self.objects(db)) {
            throw StoreError.bookkeepingChanged(statement: statement.sql, object: changed)
        }
        // A unique index made or dropped changes which rows a REPLACE can displace
        // (`DisplacedRows`), and a trigger made on a tracked table must fire after capture
        // (`CaptureTriggers.outranked`): the capture triggers follow at once, for the statements
        // after it. Any other schema change leaves them as they are.
        let dependentsNow = try Self.dependents(of: tables, db)
        guard dependentsNow != dependents else { return }
        dependents = dependentsNow
        let repairs = try CaptureTriggers.repairs(tables, in: db)
        guard !repairs.isEmpty else { return }
        for repair in repairs {
            try CaptureTriggers.apply(repair, in: db, droppingUnusedScratch: true)
        }
        bookkeeping = try Self.objects(db)
        cookies = try Self.cookies(db)
    }

    /// The first object, by name, whose SQL differs between `before` and `after` (`objects`), or
    /// that only one of them holds: named as the SQL that changed it names it, since an index
    /// SQLite made for a table goes with the table.
    static func firstChanged(before: [String: String], after: [String: String]) -> String? {
        Set(after.keys).union(before.keys).sorted {
            ($0.hasPrefix("sqlite_") ? 1 : 0, $0) < ($1.hasPrefix("sqlite_") ? 1 : 0, $1)
        }.first { after[$0] != before[$0] }
    }

    /// After the last statement: schema changes that left every tracked table and every object of
    /// Tidemark's as they were at each step cannot have written behind capture, so the kept row
    /// digests still hold, as they did before.
    func finish() throws {
        if changed, digestsTrusted { try RowDigests.trust(db) }
    }

    /// The SQL of every index and trigger of main on a table of `tables` that is not Tidemark's,
    /// by name.
    private static func dependents(of tables: [TrackedTable], _ db: Database) throws -> [String: String] {
        let names = tables.map { $0.name.lowercased() }
        var found: [String: String] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT name, sql FROM sqlite_schema WHERE type IN ('index', 'trigger')
                    AND name NOT LIKE 'tidemark\\_%' ESCAPE '\\'
                    AND lower(tbl_name) IN (\(names.map { _ in "?" }.joined(separator: ", ")))
                """, arguments: StatementArguments(names))
        {
            found[row[0]] = row[1] ?? ""
        }
        return found
    }

    /// The schema cookies of main and temp, which every schema change increments.
    private static func cookies(_ db: Database) throws -> [Int] {
        // Read after every statement: prepared once per connection.
        [
            try Int.fetchOne(try db.cachedStatement(sql: "PRAGMA main.schema_version")) ?? 0,
            try Int.fetchOne(try db.cachedStatement(sql: "PRAGMA temp.schema_version")) ?? 0,
        ]
    }

    /// The SQL of every object of main and temp that is Tidemark's, is attached to one of its
    /// tables, or names one (`tidemark_…`), by name (temp ones as `temp.name`).
    static func objects(_ db: Database) throws -> [String: String] {
        var objects: [String: String] = [:]
        for (schema, prefix) in [("main", ""), ("temp", "temp.")] {
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT name, sql FROM \(schema).sqlite_schema
                    WHERE name LIKE 'tidemark\\_%' ESCAPE '\\' OR tbl_name LIKE 'tidemark\\_%' ESCAPE '\\'
                        OR sql LIKE '%tidemark\\_%' ESCAPE '\\'
                    """)
            {
                objects[prefix + (row[0] as String)] = row[1] ?? ""
            }
        }
        return objects
    }
}
