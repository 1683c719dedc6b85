import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `Store.initialize` and `Store.open`: creating, adopting, refusing bad input without a trace,
/// and re-running.
@Suite struct StoreInitTests {
    /// The files a failed `initialize` must not leave behind for a store that did not exist.
    static func leftovers(_ path: String) -> [String] {
        [path, path + "-wal", path + "-shm", path + "-journal", path + ".key"].filter {
            FileManager.default.fileExists(atPath: $0)
        }
    }

    @Test func createsAStoreAndItsKey() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let (store, created) = try Store.initialize(
            path,
            setup: Store.Setup(replicaName: "laptop", schema: ("s.sql", StoreFixture.schema), preserve: ["items.name"]))
        #expect(created)
        #expect(store.replica.name == "laptop")
        let key = try KeyFile.load(path + ".key")
        #expect(store.replica.id == Replica.ID(publicKey: key.publicKey))
        let mode = try #require(
            try FileManager.default.attributesOfItem(atPath: path + ".key")[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0)
        #expect(store.trackedTables.map(\.name) == ["items", "tags"])
        #expect(store.trackedTable(named: "items")?.keyColumns == ["id"])
        #expect(store.trackedTable(named: "items")?.preservedColumns == ["name"])
        #expect(store.trackedTable(named: "tags")?.keyColumns == ["item", "tag"])
        // Empty tables: nothing to adopt, so no transaction.
        #expect(try store.fetchHistory().isEmpty)
        #expect(try store.currentToken() == .zero)
        // And it opens again.
        #expect(try Store.open(path).replica == store.replica)
    }

    @Test func adoptsRowsAlreadyInTheDatabaseAsOneTransaction() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("app.db")
        try await SQLiteShell.execute(
            path,
            """
            CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT);
            INSERT INTO notes VALUES ('n1', 'first'), ('n2', NULL);
            CREATE TABLE other(id TEXT PRIMARY KEY);
            INSERT INTO other VALUES ('o');
            """)
        let (store, created) = try Store.initialize(path, setup: Store.Setup(replicaName: "a", tables: ["notes"]))
        #expect(created)
        let history = try store.fetchHistory()
        try #require(history.count == 1)
        #expect(history[0].sequence == 1)
        #expect(history[0].contextName == "adopt")
        #expect(history[0].author == "tidemark")
        #expect(
            history[0].changes.rows == [
                RowChange(
                    type: .insert, table: "notes", key: [.init("id", .text("n1"))],
                    values: [.init("id", .text("n1")), .init("body", .text("first"))]),
                RowChange(
                    type: .insert, table: "notes", key: [.init("id", .text("n2"))],
                    values: [.init("id", .text("n2")), .init("body", .null)]),
            ])
        #expect(store.trackedTables.map(\.name) == ["notes"])
    }

    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAlone() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.txt")
        let bytes = Data("These are my notes, not a database.\n".utf8) + Data(repeating: 7, count: 5000)
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(throws: StoreError.notADatabase(path: path)) {
            try Store.initialize(path, setup: Store.Setup(replicaName: "a"))
        }
        #expect(throws: StoreError.notADatabase(path: path)) { try Store.open(path) }
        #expect(FileManager.default.contents(atPath: path) == bytes)
        #expect(Self.leftovers(path) == [path])
    }

    @Test func openingAMissingStoreSaysSo() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("missing.db")
        #expect(throws: StoreError.storeNotFound(path: path)) { try Store.open(path) }
        #expect(Self.leftovers(path).isEmpty)
    }

    @Test func aSchemaErrorLeavesNoStoreAndNoKey() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let schema = "CREATE TABLE items(id TEXT PRIMARY KEY);\nCREATE TABLE broken(id TEXT PRIMARY KEY,, x);\n"
        let error = #expect(throws: StoreError.self) {
            try Store.initialize(path, setup: Store.Setup(replicaName: "a", schema: ("bad.sql", schema)))
        }
        guard case .schemaFailed(let file, let message) = error else {
            Issue.record("expected schemaFailed, got \(String(describing: error))")
            return
        }
        #expect(file == "bad.sql")
        #expect(message.contains("syntax error"))
        #expect(Self.leftovers(path).isEmpty)
    }

    static let untrackable: [(label: String, schema: String, track: [String], check: @Sendable (StoreError) -> Bool)] =
        [
            ("unknown table", "CREATE TABLE items(id TEXT PRIMARY KEY);", ["nope"], { $0 == .unknownTable("nope") }),
            (
                "no primary key", "CREATE TABLE loose(a TEXT, b TEXT);", [],
                {
                    guard case .untrackableTable("loose", let reason, let hint) = $0 else { return false }
                    return reason.contains("PRIMARY KEY") && hint.contains("PRIMARY KEY")
                }
            ),
            (
                "rowid alias", "CREATE TABLE counted(id INTEGER PRIMARY KEY, v);", [],
                {
                    guard case .untrackableTable("counted", let reason, let hint) = $0 else { return false }
                    return reason.contains("INTEGER PRIMARY KEY") && hint.contains("UUID") && hint.contains("TEXT")
                }
            ),
            (
                "key with a collation", "CREATE TABLE named(id TEXT COLLATE NOCASE PRIMARY KEY, v);", [],
                {
                    guard case .untrackableTable("named", let reason, let hint) = $0 else { return false }
                    return reason.contains("COLLATE NOCASE") && hint.contains("BINARY")
                }
            ),
            (
                "key with a collation in a table constraint, without rowid",
                "CREATE TABLE named(a TEXT, b TEXT, PRIMARY KEY (a, b COLLATE RTRIM)) WITHOUT ROWID;", [],
                {
                    guard case .untrackableTable("named", let reason, _) = $0 else { return false }
                    return reason.contains("its key 'b' compares with COLLATE RTRIM")
                }
            ),
            (
                "rowid alias, descending in a table constraint",
                "CREATE TABLE counted(id INTEGER, v, PRIMARY KEY (id DESC));", [],
                {
                    guard case .untrackableTable("counted", let reason, _) = $0 else { return false }
                    return reason.contains("INTEGER PRIMARY KEY")
                }
            ),
            (
                "rowid alias, lower case", "CREATE TABLE counted(id integer primary key, v);", [],
                {
                    if case .untrackableTable("counted", _, let hint) = $0 {
                        return hint.contains("UUID")
                    } else {
                        return false
                    }
                }
            ),
            (
                "preserve of an unknown column", "CREATE TABLE items(id TEXT PRIMARY KEY);", [],
                { $0 == .unknownColumn(table: "items", column: "nope") }
            ),
            (
                "reserved name", "CREATE TABLE tidemark_mine(id TEXT PRIMARY KEY);", ["tidemark_mine"],
                {
                    if case .untrackableTable("tidemark_mine", _, _) = $0 { return true } else { return false }
                }
            ),
            (
                "nothing to track", "CREATE VIEW just_a_view AS SELECT 1;", [],
                {
                    if case .nothingToTrack = $0 { return true } else { return false }
                }
            ),
        ]

    /// A new store that cannot be set up leaves no file behind.
    @Test(arguments: untrackable)
    func untrackableSchemaLeavesNoStore(
        label: String, schema: String, track: [String], check: @Sendable (StoreError) -> Bool
    ) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let preserve = label == "preserve of an unknown column" ? ["items.nope"] : []
        let error = #expect(throws: StoreError.self, "\(label)") {
            try Store.initialize(
                path, setup: Store.Setup(replicaName: "a", schema: ("s.sql", schema), tables: track, preserve: preserve)
            )
        }
        #expect(error.map(check) == true, "\(label): \(String(describing: error))")
        #expect(Self.leftovers(path).isEmpty, "\(label)")
    }

    /// An existing database that cannot be adopted is left exactly as it was, with no key beside it.
    @Test(arguments: untrackable.filter { $0.label != "nothing to track" })
    func untrackableDatabaseIsLeftAsItWas(
        label: String, schema: String, track: [String], check: @Sendable (StoreError) -> Bool
    ) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("app.db")
        try await SQLiteShell.execute(
            path, schema + "\nCREATE TABLE fine(id TEXT PRIMARY KEY, v); INSERT INTO fine VALUES ('x', 1);")
        let before = try await SQLiteShell.dump(path)
        let bytes = FileManager.default.contents(atPath: path)
        let preserve = label == "preserve of an unknown column" ? ["items.nope"] : []
        let error = #expect(throws: StoreError.self, "\(label)") {
            try Store.initialize(path, setup: Store.Setup(replicaName: "a", tables: track, preserve: preserve))
        }
        #expect(error.map(check) == true, "\(label): \(String(describing: error))")
        #expect(try await SQLiteShell.dump(path) == before, "\(label)")
        #expect(FileManager.default.contents(atPath: path) == bytes, "\(label)")
        #expect(Self.leftovers(path) == [path], "\(label)")
    }

    @Test(arguments: [
        "CREATE TABLE t(id INTEGER PRIMARY KEY, v) WITHOUT ROWID;",
        "CREATE TABLE t(id INT PRIMARY KEY, v);",
        "CREATE TABLE t(a INTEGER, b INTEGER, PRIMARY KEY (a, b));",
        "CREATE TABLE t(id BLOB PRIMARY KEY, v);",
        // Not a rowid alias: SQLite keeps this one as an ordinary key, with an index of its own.
        "CREATE TABLE t(id INTEGER PRIMARY KEY DESC, v);",
    ])
    func applicationChosenKeysAreAccepted(schema: String) throws {
        let directory = try TemporaryDirectory()
        let (store, _) = try Store.initialize(
            directory.file("s.db"), setup: Store.Setup(replicaName: "a", schema: ("s.sql", schema)))
        #expect(store.trackedTables.map(\.name) == ["t"])
    }

    @Test func invalidReplicaNameIsRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("s.db")
        #expect(throws: StoreError.invalidReplicaName("my laptop")) {
            try Store.initialize(
                path, setup: Store.Setup(replicaName: "my laptop", schema: ("s.sql", StoreFixture.schema)))
        }
        #expect(Self.leftovers(path).isEmpty)
    }

    /// The keys a table must have to start being tracked are not asked again of one tracked
    /// before (an app initializes its store at every launch): a store an earlier build made with a
    /// NOCASE key opens and initializes again.
    @Test func aTableTrackedBeforeIsNotAskedForItsKeysAgain() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("s.db")
        let setup = Store.Setup(replicaName: "a", schema: ("s.sql", "CREATE TABLE t(k TEXT PRIMARY KEY, v);"))
        _ = try Store.initialize(path, setup: setup)
        try await SQLiteShell.execute(
            path,
            "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = 'CREATE TABLE t(k TEXT PRIMARY KEY COLLATE NOCASE, v)' WHERE name = 't';"
        )
        let again = try Store.initialize(path, setup: Store.Setup(replicaName: "a"))
        #expect(!again.created)
        #expect(again.store.trackedTables.map(\.name) == ["t"])
    }

    @Test func aNewerStoreFormatIsRefusedAndLeftAlone() async throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        try await SQLiteShell.execute(fixture.path, "UPDATE tidemark_meta SET value = 99 WHERE key = 'format'")
        let before = try await SQLiteShell.dump(fixture.path)
        let expected = StoreError.newerFormat(path: fixture.path, found: 99, supported: 3)
        #expect(throws: expected) { try Store.open(fixture.path) }
        #expect(throws: expected) {
            try Store.initialize(fixture.path, setup: Store.Setup(replicaName: "a", preserve: ["items.name"]))
        }
        #expect(expected.hint?.contains("upgrade") == true)
        #expect(try await SQLiteShell.dump(fixture.path) == before)
    }

    @Test func reinitializingWithTheSameSettingsChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("app.db")
        try await SQLiteShell.execute(
            path, "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT); INSERT INTO items VALUES ('a', 'A');")
        let setup = Store.Setup(replicaName: "a", tables: ["items"], preserve: ["items.name"])
        let (first, created) = try Store.initialize(path, setup: setup)
        #expect(created)
        let before = try await SQLiteShell.dump(path)
        let key = FileManager.default.contents(atPath: path + ".key")

        let (again, createdAgain) = try Store.initialize(path, setup: setup)
        #expect(!createdAgain)
        #expect(again.replica == first.replica)
        #expect(try await SQLiteShell.dump(path) == before)
        #expect(FileManager.default.contents(atPath: path + ".key") == key)
    }

    /// Re-running the very same `init`, schema file included, is how scripts make sure a store exists.
    @Test func reinitializingWithTheSameSchemaFileChangesNothing() async throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        let before = try await SQLiteShell.dump(fixture.path)
        let (again, created) = try Store.initialize(
            fixture.path,
            setup: Store.Setup(replicaName: "a", schema: ("schema.sql", StoreFixture.schema), preserve: ["items.name"]))
        #expect(!created)
        #expect(again.replica == fixture.store.replica)
        #expect(try await SQLiteShell.dump(fixture.path) == before)
    }

    /// A script runs the same `init`, schema file included, before its migrations: once they are
    /// made, the store is still the one that `init` created, and other settings are still refused.
    @Test func reinitializingAfterMigrationsWithTheSetupItWasCreatedWithChangesNothing() async throws {
        let fixture = try StoreFixture()
        let setup = Store.Setup(replicaName: "a", schema: ("schema.sql", StoreFixture.schema), preserve: ["items.name"])
        _ = try fixture.store.migrate(Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT"))
        _ = try fixture.store.execute(sql: "INSERT INTO items(id, color) VALUES ('a', 'red')")
        _ = try fixture.store.migrate(Store.Migration(sql: "ALTER TABLE items DROP COLUMN color"))
        try await SQLiteShell.execute(fixture.path, "ALTER TABLE items ADD COLUMN pinned; CREATE TABLE cache(k, v);")
        _ = try Store.open(fixture.path)
        let before = try await SQLiteShell.dump(fixture.path)
        let (again, created) = try Store.initialize(fixture.path, setup: setup)
        #expect(!created)
        #expect(again.replica == fixture.store.replica)
        #expect(try await SQLiteShell.dump(fixture.path) == before)
        for other in [
            Store.Setup(replicaName: "a", schema: ("schema.sql", StoreFixture.schema)),
            Store.Setup(replicaName: "a", tables: ["items"], preserve: ["items.name"]),
        ] {
            #expect(throws: StoreError.self) { try Store.initialize(fixture.path, setup: other) }
        }
        #expect(try await SQLiteShell.dump(fixture.path) == before)
    }

    @Test(arguments: [
        ("another replica name", Store.Setup(replicaName: "b", preserve: ["items.name"])),
        ("fewer tables", Store.Setup(replicaName: "a", tables: ["items"], preserve: ["items.name"])),
        ("other preserved columns", Store.Setup(replicaName: "a", preserve: ["items.note"])),
        ("no preserved columns", Store.Setup(replicaName: "a")),
        (
            "a schema that adds a table",
            Store.Setup(
                replicaName: "a", schema: ("more.sql", "CREATE TABLE more(id TEXT PRIMARY KEY);"),
                preserve: ["items.name"])
        ),
    ])
    func reinitializingWithOtherSettingsIsRefusedAndChangesNothing(label: String, setup: Store.Setup) async throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        let before = try await SQLiteShell.dump(fixture.path)
        let error = #expect(throws: StoreError.self, "\(label)") { try Store.initialize(fixture.path, setup: setup) }
        guard case .alreadyInitialized(let path, _) = error else {
            Issue.record("\(label): expected alreadyInitialized, got \(String(describing: error))")
            return
        }
        #expect(path == fixture.path)
        #expect(try await SQLiteShell.dump(fixture.path) == before, "\(label)")
    }

    @Test func columnsAddedOrRenamedByAnotherClientAreAdoptedAndAKeyChangeRefused() async throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO tags(item, tag, weight) VALUES ('i', 't', 3)")
        try await SQLiteShell.execute(fixture.path, "ALTER TABLE tags ADD COLUMN extra")
        let adopted = try Store.open(fixture.path)
        #expect(adopted.adoptedSchemaChange?.addedColumns == ["tags": ["extra"]])
        #expect(adopted.trackedTable(named: "tags")?.columns.last == "extra")

        // SQLite renames the column in the capture triggers too: the rename keeps its identity.
        try await SQLiteShell.execute(fixture.path, "ALTER TABLE tags RENAME COLUMN weight TO heft")
        let renamed = try Store.open(fixture.path)
        #expect(renamed.adoptedSchemaChange?.renamedColumns == ["tags": ["weight": "heft"]])
        _ = try renamed.execute(sql: "UPDATE tags SET heft = 4")
        #expect(try renamed.fetchHistory().last?.changes.first?.values.map(\.name) == ["heft"])

        // The triggers name every column: SQLite itself refuses to drop one behind Tidemark's back.
        let before = try await SQLiteShell.dump(fixture.path)
        let dropped = try await SQLiteShell.run(fixture.path, "ALTER TABLE tags DROP COLUMN heft")
        #expect(dropped.exitCode != 0 && dropped.stderr.contains("tidemark_"), "\(dropped.stderr)")
        #expect(try await SQLiteShell.dump(fixture.path) == before)

        try await SQLiteShell.execute(
            fixture.path,
            """
            CREATE TABLE tags2(item TEXT NOT NULL, tag TEXT NOT NULL, heft, extra, PRIMARY KEY (item)) WITHOUT ROWID;
            DROP TABLE tags; ALTER TABLE tags2 RENAME TO tags;
            """)
        let error = #expect(throws: StoreError.self) { try Store.open(fixture.path) }
        guard case .trackedTableChanged("tags", let now) = error else {
            Issue.record("expected trackedTableChanged, got \(String(describing: error))")
            return
        }
        #expect(now.contains("primary key changed"), "\(now)")
    }
}
