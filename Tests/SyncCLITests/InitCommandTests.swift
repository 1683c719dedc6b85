import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync init`, and how every command treats a path that is not a usable store: one clear error
/// line, a non-zero exit, and the file exactly as it was.
@Suite struct InitCommandTests {
    /// Files next to a store path that exist.
    static func existing(_ path: String) -> [String] {
        [path, path + "-wal", path + "-shm", path + "-journal", path + ".key"].filter {
            FileManager.default.fileExists(atPath: $0)
        }
    }

    @Test func createsAStoreThatStatusDescribes() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("store.db")
        let schema = directory.file("schema.sql")
        try CLIStore.schema.write(toFile: schema, atomically: false, encoding: .utf8)
        let result = try await SyncProcess.run([
            "init", "--store", path, "--replica", "laptop", "--schema", schema, "--preserve", "items.name",
        ])
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr.isEmpty)
        try #require(result.stdoutLines.count == 1)
        let words = result.stdoutLines[0].split(separator: " ")
        #expect(words.count == 2 && words[0] == "laptop")
        let id = try #require(words.last.flatMap { Replica.ID(hex: String($0)) })
        #expect(id == Replica.ID(publicKey: try KeyFile.load(path + ".key").publicKey))

        let status = try await SyncProcess.run(["status", "--store", path, "--json"])
        #expect(status.exitCode == 0, "\(status)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(object["replica"] as? String == "laptop")
        #expect(object["id"] as? String == id.description)
        #expect(object["token"] as? String == History.Token.zero.description)
        let tables = try #require(object["tables"] as? [[String: Any]])
        #expect(tables.map { $0["name"] as? String } == ["items", "tags"])
        #expect(tables.map { $0["key"] as? [String] } == [["id"], ["item", "tag"]])
        #expect(tables.map { $0["preserved"] as? [String] } == [["name"], []])
        let history = try #require(object["history"] as? [String: Any])
        #expect(history["transactions"] as? Int == 0)
        #expect(history["pending_changes"] as? Int == 0)

        let text = try await SyncProcess.run(["status", "--store", path])
        #expect(text.stdoutLines.contains("table    items key(id) preserve(name)"), "\(text)")
        #expect(text.stdoutLines.contains("table    tags key(item, tag)"), "\(text)")
    }

    @Test func aFileThatIsNotADatabaseIsRefusedByEveryCommand() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.txt")
        let bytes = Data("Shopping: apples, pears.\n".utf8) + Data(repeating: 0x2a, count: 4096)
        try bytes.write(to: URL(fileURLWithPath: path))
        for arguments in [
            ["init", "--store", path, "--replica", "a"], ["init", "--store", path, "--replica", "a", "--track", "t"],
            ["exec", "--store", path, "SELECT 1"], ["log", "--store", path], ["token", "--store", path],
            ["status", "--store", path],
            ["watch", "--store", path],
        ] {
            expectFailure(try await SyncProcess.run(arguments), "\(path) is not a SQLite database")
            #expect(FileManager.default.contents(atPath: path) == bytes, "\(arguments)")
            #expect(Self.existing(path) == [path], "\(arguments)")
        }
    }

    @Test func aSchemaWithAnErrorLeavesNoStoreAndNoKey() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let schema = directory.file("bad.sql")
        try
            "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT);\nINSERT INTO items VALUES ('a', 'A');\nCREATE TABLE oops(id TEXT PRIMARY KEY,,);\n"
            .write(toFile: schema, atomically: false, encoding: .utf8)
        let result = try await SyncProcess.run(["init", "--store", path, "--replica", "a", "--schema", schema])
        expectFailure(result, "schema file \(schema) failed")
        #expect(result.errorLines.first?.contains("syntax error") == true, "\(result)")
        #expect(Self.existing(path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["bad.sql"])
    }

    /// A store moved aside leaves its key beside its path: `init` there uses it (a key may be put
    /// there on purpose) but warns that the store is the old replica again; while the old store's
    /// bundles are in the folder, the new one's push is refused as a restored copy instead of
    /// reusing their numbers.
    @Test func initWarnsOfTheKeyAStoreMovedAsideLeftAndItsPushIsRefused() async throws {
        let old = try await CLIStore(replica: "a")
        let id = try await old.id()
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await old.exec("INSERT INTO items(id, name) VALUES ('a-1', 'old')")
        #expect(try await old.sync("push", "--to", exchange.path).exitCode == 0)
        try FileManager.default.moveItem(atPath: old.path, toPath: old.directory.file("moved.db"))
        let keyPath = old.path + ".key"
        let again = try await SyncProcess.run([
            "init", "--store", old.path, "--replica", "a2", "--schema", old.schemaFile,
        ])
        #expect(again.exitCode == 0 && again.stdoutLines == ["a2 \(id)"], "\(again)")
        #expect(
            again.stderrLines.count == 1
                && again.stderrLines[0].hasPrefix(
                    "warning: using the key file already at \(keyPath): this store is replica \(id.short) again, "),
            "\(again)")
        try await old.exec("INSERT INTO items(id, name) VALUES ('a-2', 'new')")
        expectFailure(
            try await old.sync("push", "--to", exchange.path), "the store was restored from an older copy")
    }

    /// Joining from a file that is missing or not a bundle fails without leaving a store behind,
    /// so the same command runs again once the file is right; an existing key file stays.
    @Test(arguments: [false, true]) func aJoinThatFailsLeavesNoStoreAndNoKey(keyExisted: Bool) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let schema = directory.file("schema.sql")
        try CLIStore.schema.write(toFile: schema, atomically: false, encoding: .utf8)
        let junk = directory.file("junk.tms")
        try "not a bundle".write(toFile: junk, atomically: false, encoding: .utf8)
        let key = directory.file("own.key")
        if keyExisted { _ = try KeyFile.create(key) }
        let keyBytes = keyExisted ? FileManager.default.contents(atPath: key) : nil
        for from in [directory.file("missing.tms"), junk] {
            let result = try await SyncProcess.run([
                "init", "--store", path, "--replica", "d", "--schema", schema, "--key", key, "--from", from,
            ])
            #expect(result.exitCode != 0, "\(result)")
            #expect(result.stdout.isEmpty, "\(result)")
            #expect(result.errorLines.first?.contains(from) == true, "\(result)")
            #expect(Self.existing(path).isEmpty, "\(from)")
            #expect(FileManager.default.fileExists(atPath: key) == keyExisted)
            #expect(FileManager.default.contents(atPath: key) == keyBytes)
        }
        let again = try await SyncProcess.run([
            "init", "--store", path, "--replica", "d", "--schema", schema, "--key", key,
        ])
        #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again)")
    }

    @Test func anUnreadableSchemaFileIsNamed() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let missing = directory.file("missing.sql")
        expectFailure(
            try await SyncProcess.run(["init", "--store", path, "--replica", "a", "--schema", missing]),
            "cannot read \(missing)")
        #expect(Self.existing(path).isEmpty)
    }

    static let untrackable: [(label: String, schema: String, arguments: [String], message: String, hint: String?)] = [
        (
            "unknown table", "CREATE TABLE items(id TEXT PRIMARY KEY);", ["--track", "nope"], "no table named 'nope'",
            nil
        ),
        ("no primary key", "CREATE TABLE loose(a TEXT, b TEXT);", [], "cannot track table 'loose'", "PRIMARY KEY"),
        (
            "a name with Tidemark's prefix", "CREATE TABLE Tidemark_Notes(id TEXT PRIMARY KEY, body);", [],
            "cannot track table 'Tidemark_Notes': names beginning with 'tidemark_' are reserved", "rename the table"
        ),
        ("rowid alias", "CREATE TABLE counted(id INTEGER PRIMARY KEY, v);", [], "cannot track table 'counted'", "UUID"),
        (
            "preserve of an unknown column", "CREATE TABLE items(id TEXT PRIMARY KEY);", ["--preserve", "items.nope"],
            "table 'items' has no column 'nope'", nil
        ),
        (
            "malformed preserve", "CREATE TABLE items(id TEXT PRIMARY KEY);", ["--preserve", "items"],
            "invalid --preserve 'items'", nil
        ),
        (
            "invalid replica name", "CREATE TABLE items(id TEXT PRIMARY KEY);", ["--replica", "my laptop"],
            "invalid replica name", nil
        ),
    ]

    /// Adopting an existing database that cannot be tracked leaves it exactly as it was.
    @Test(arguments: untrackable)
    func anUntrackableDatabaseIsLeftAsItWas(
        label: String, schema: String, arguments: [String], message: String, hint: String?
    ) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("app.db")
        try await SQLiteShell.execute(
            path, schema + "\nCREATE TABLE fine(id TEXT PRIMARY KEY, v); INSERT INTO fine VALUES ('x', 1);")
        let before = try await SQLiteShell.dump(path)
        let bytes = FileManager.default.contents(atPath: path)
        let replica = arguments.contains("--replica") ? [] : ["--replica", "a"]
        let result = try await SyncProcess.run(["init", "--store", path] + replica + arguments)
        expectFailure(result, message, hint: hint)
        #expect(try await SQLiteShell.dump(path) == before, "\(label)")
        #expect(FileManager.default.contents(atPath: path) == bytes, "\(label)")
        #expect(Self.existing(path) == [path], "\(label)")
    }

    /// Creating a store whose schema cannot be tracked leaves no file behind.
    @Test(arguments: untrackable)
    func anUntrackableSchemaLeavesNoStore(
        label: String, schema: String, arguments: [String], message: String, hint: String?
    ) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let schemaFile = directory.file("schema.sql")
        try schema.write(toFile: schemaFile, atomically: false, encoding: .utf8)
        let replica = arguments.contains("--replica") ? [] : ["--replica", "a"]
        let result = try await SyncProcess.run(["init", "--store", path, "--schema", schemaFile] + replica + arguments)
        expectFailure(result, message, hint: hint)
        #expect(Self.existing(path).isEmpty, "\(label)")
    }

    /// A table with Tidemark's prefix is refused even where the tables to track are named, and so
    /// is one named as Tidemark's own tables are, which was taken for a store's bookkeeping: the
    /// database is left as it was.
    @Test(arguments: [
        ("tidemark_notes", "id TEXT PRIMARY KEY"), ("tidemark_meta", "id TEXT PRIMARY KEY"),
        ("tidemark_meta", "key TEXT PRIMARY KEY, value"), ("Tidemark_Changes", "id TEXT PRIMARY KEY"),
    ])
    func aTableWithTidemarksPrefixIsRefusedWhateverIsTracked(_ name: String, _ columns: String) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("app.db")
        try await SQLiteShell.execute(
            path, "CREATE TABLE \(name)(\(columns)); CREATE TABLE items(id TEXT PRIMARY KEY, v);")
        let before = try await SQLiteShell.dump(path)
        for extra in [[], ["--track", "items"]] {
            let result = try await SyncProcess.run(["init", "--store", path, "--replica", "a"] + extra)
            expectFailure(
                result, "cannot track table '\(name)': names beginning with 'tidemark_' are reserved",
                hint: "rename the table")
            #expect(try await SQLiteShell.dump(path) == before)
        }
    }

    @Test func theRowidAliasHintSuggestsATextUUIDKey() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("new.db")
        let schemaFile = directory.file("schema.sql")
        try "CREATE TABLE counted(id INTEGER PRIMARY KEY, v);".write(
            toFile: schemaFile, atomically: false, encoding: .utf8)
        let result = try await SyncProcess.run(["init", "--store", path, "--replica", "a", "--schema", schemaFile])
        expectFailure(result, "INTEGER PRIMARY KEY")
        #expect(
            result.hintLines == ["hint: use a key the application chooses, e.g. `id TEXT PRIMARY KEY` holding a UUID"])
    }

    @Test func aStoreOfANewerFormatIsRefusedByEveryCommandAndLeftAlone() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('a')")
        let token = try await store.token()
        try await SQLiteShell.execute(store.path, "UPDATE tidemark_meta SET value = 99 WHERE key = 'format'")
        let before = try await store.dump()
        for arguments in [
            ["exec", "INSERT INTO items(id) VALUES ('b')"], ["log"], ["log", "--since", token], ["token"], ["status"],
            ["watch"],
            ["init", "--replica", "laptop", "--schema", store.schemaFile, "--preserve", "items.name"],
        ] {
            let result = try await SyncProcess.run([arguments[0], "--store", store.path] + arguments.dropFirst())
            expectFailure(
                result, "created by a newer Tidemark (store format 99; this build reads format 3)", hint: "upgrade")
        }
        #expect(try await store.dump() == before)
    }

    /// Re-running the very command that created the store succeeds and changes nothing.
    @Test func rerunningTheSameInitChangesNothing() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('a')")
        let before = try await store.dump()
        let key = FileManager.default.contents(atPath: store.path + ".key")
        let first = try await store.status()["id"] as? String

        let result = try await SyncProcess.run([
            "init", "--store", store.path, "--replica", "laptop", "--schema", store.schemaFile, "--preserve",
            "items.name",
        ])
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdoutLines == ["laptop \(first ?? "?")"])
        #expect(result.stderrLines == ["already initialized; nothing changed"])
        #expect(result.errorLines.isEmpty)
        #expect(try await store.dump() == before)
        #expect(FileManager.default.contents(atPath: store.path + ".key") == key)
    }

    /// The same, for a store adopted from an existing database (no schema file).
    @Test func rerunningTheSameAdoptingInitChangesNothing() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("app.db")
        try await SQLiteShell.execute(
            path, "CREATE TABLE notes(id TEXT PRIMARY KEY, body); INSERT INTO notes VALUES ('n', 'hello');")
        let arguments = ["init", "--store", path, "--replica", "phone", "--track", "notes", "--preserve", "notes.body"]
        let created = try await SyncProcess.run(arguments)
        #expect(created.exitCode == 0 && created.stderr.isEmpty, "\(created)")
        let adopted = try LogDocument.parse(try await SyncProcess.run(["log", "--store", path, "--json"]).stdout)
        #expect(adopted.map(\.context) == ["adopt"])
        #expect(
            adopted.first?.changes == [
                LoggedChange(
                    type: "insert", table: "notes", key: ["id": .text("n")],
                    values: ["id": .text("n"), "body": .text("hello")])
            ])
        let before = try await SQLiteShell.dump(path)

        let again = try await SyncProcess.run(arguments)
        #expect(again.exitCode == 0, "\(again)")
        #expect(again.stdoutLines == created.stdoutLines)
        #expect(again.stderrLines == ["already initialized; nothing changed"])
        #expect(try await SQLiteShell.dump(path) == before)
    }

    static let otherSettings = "it tracks (items, tags) with other settings than the ones given"

    @Test(arguments: [
        (
            "another replica name", ["--replica", "desktop", "--preserve", "items.name"],
            "it is replica 'laptop', not 'desktop'"
        ),
        ("fewer tables", ["--replica", "laptop", "--track", "items", "--preserve", "items.name"], Self.otherSettings),
        ("other preserved columns", ["--replica", "laptop", "--preserve", "items.note"], Self.otherSettings),
        ("no preserved columns", ["--replica", "laptop"], Self.otherSettings),
    ])
    func rerunningInitWithOtherSettingsIsRefused(label: String, arguments: [String], difference: String) async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('a')")
        let before = try await store.dump()
        let result = try await SyncProcess.run(["init", "--store", store.path] + arguments)
        expectFailure(result, "\(store.path) is already initialized: \(difference)", hint: "sync status")
        #expect(try await store.dump() == before, "\(label)")
    }

    @Test func aSchemaThatWouldChangeAnInitializedStoreIsRefused() async throws {
        let store = try await CLIStore()
        let before = try await store.dump()
        let more = store.directory.file("more.sql")
        try "CREATE TABLE more(id TEXT PRIMARY KEY);".write(toFile: more, atomically: false, encoding: .utf8)
        let result = try await SyncProcess.run([
            "init", "--store", store.path, "--replica", "laptop", "--schema", more, "--preserve", "items.name",
        ])
        expectFailure(result, "already initialized")
        #expect(try await store.dump() == before)
    }
}
