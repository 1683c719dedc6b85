import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync exec`: one tracked transaction per call, all or nothing.
@Suite struct ExecCommandTests {
    @Test func insertUpdateDeleteAreRecorded() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id, name, qty, note) VALUES ('k', 'Kiwi', 1, 'green')", author: "me")
        try await store.exec("UPDATE items SET qty = 2, note = NULL WHERE id = 'k'")
        try await store.exec("DELETE FROM items WHERE id = 'k'", context: "cleanup")
        let log = try await store.log()
        #expect(log.map(\.seq) == [1, 2, 3])
        #expect(log.map(\.author) == ["me", nil, nil])
        #expect(log.map(\.context) == [nil, nil, "cleanup"])
        #expect(log.map { $0.changes.map(\.type) } == [["insert"], ["update"], ["delete"]])
        #expect(log[1].changes.first?.values == ["qty": .integer(2), "note": .null])
        #expect(log[1].changes.first?.columns == ["qty", "note"])
        #expect(log[2].changes.first?.tombstone == ["id": .text("k"), "name": .text("Kiwi")])
        #expect(log[2].changes.first?.values == nil)
    }

    /// An author or context name a bundle cannot carry (empty, or over 4096 bytes) is refused
    /// before anything is written: once in history, every peer would refuse this replica's bundles.
    @Test func anAuthorOrContextABundleCannotCarryIsRefused() async throws {
        let store = try await CLIStore()
        let long = String(repeating: "x", count: 4097)
        for (flag, value, reason) in [
            ("--author", "", "a name cannot be empty"), ("--context", "", "a name cannot be empty"),
            ("--author", long, "it is 4097 bytes, and a name is at most 4096"),
        ] {
            let result = try await store.sync("exec", flag, value, "INSERT INTO items(id) VALUES ('a')")
            let shown = value.isEmpty ? "" : String(repeating: "x", count: 40) + "…"
            #expect(result.exitCode == 1, "\(result)")
            #expect(result.stderrLines.first == "error: invalid \(flag) '\(shown)': \(reason)", "\(result)")
            #expect(
                result.stderrLines.dropFirst().first
                    == "hint: give --author and --context a name of 1 to 4096 bytes, or leave them out", "\(result)")
        }
        #expect(try await store.log().isEmpty)
        #expect(try await store.exec("SELECT count(*) FROM items").stdoutLines == ["0"])
        try await store.exec("INSERT INTO items(id) VALUES ('a')", author: String(repeating: "é", count: 2048))
        #expect(try await store.log().first?.author?.count == 2048)
    }

    @Test func queriesPrintTheirRows() async throws {
        let store = try await CLIStore()
        try await store.exec(
            "INSERT INTO items(id, name, qty, price, photo) VALUES ('a', 'A|1', 7, 0.5, x'0a0b'), ('b', NULL, NULL, NULL, NULL)"
        )
        let result = try await store.exec("SELECT id, name, qty, price, photo FROM items ORDER BY id")
        #expect(result.stdoutLines == ["a|A|1|7|0.5|x'0a0b'", "b||||"])
        // A query changes nothing: no transaction.
        #expect(try await store.log().count == 1)
    }

    @Test func aWriteThatChangesNothingRecordsNoTransaction() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id, name, qty) VALUES ('a', 'A', 1)")
        let token = try await store.token()
        for sql in [
            "UPDATE items SET name = 'A', qty = 1", "UPDATE items SET qty = qty WHERE id = 'a'",
            "DELETE FROM items WHERE 0",
            "UPDATE items SET note = NULL", "INSERT OR IGNORE INTO items(id, name) VALUES ('a', 'other')",
        ] {
            try await store.exec(sql)
            #expect(try await store.token() == token, "\(sql)")
        }
        #expect(try await store.log().count == 1)
        #expect(try await store.log("--since", token).isEmpty)
    }

    @Test func changingTheKeyIsDeleteAndInsert() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id, name, qty) VALUES ('old', 'N', 1)")
        try await store.exec("UPDATE items SET id = 'new' WHERE id = 'old'")
        let last = try #require(try await store.log().last)
        #expect(
            last.changes == [
                LoggedChange(
                    type: "delete", table: "items", key: ["id": .text("old")],
                    tombstone: ["id": .text("old"), "name": .text("N")]),
                LoggedChange(
                    type: "insert", table: "items", key: ["id": .text("new")],
                    values: [
                        "id": .text("new"), "name": .text("N"), "qty": .integer(1), "price": .null, "photo": .null,
                        "note": .null,
                    ]),
            ])
    }

    /// The first statement succeeds, the second fails: neither is applied, nothing is recorded.
    @Test(arguments: [
        ("INSERT INTO items(id) VALUES ('x'); INSERT INTO nope VALUES (1)", "no such table: nope"),
        ("INSERT INTO items(id) VALUES ('x'); INSERT INTO items(id) VALUES ('a')", "UNIQUE constraint failed"),
        ("UPDATE items SET qty = 99; INSERT INTO tags(item) VALUES ('z')", "NOT NULL constraint failed"),
        ("DELETE FROM items; SELEC 1", "syntax error"),
    ])
    func aFailingStatementAppliesNothing(sql: String, message: String) async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id, qty) VALUES ('a', 1)")
        let before = try await store.dump()
        let token = try await store.token()
        let result = try await store.sync("exec", sql)
        expectFailure(result, "SQL failed, nothing was applied")
        #expect(result.errorLines.first?.contains(message) == true, "\(result)")
        #expect(try await store.dump() == before)
        #expect(try await store.token() == token)
        #expect(try await store.log().count == 1)
    }

    @Test func transactionControlIsRefused() async throws {
        let store = try await CLIStore()
        let before = try await store.dump()
        for sql in [
            "BEGIN; INSERT INTO items(id) VALUES ('x'); COMMIT", "INSERT INTO items(id) VALUES ('x'); ROLLBACK",
            "SAVEPOINT s",
        ] {
            expectFailure(try await store.sync("exec", sql), "is not allowed", hint: "BEGIN/COMMIT")
        }
        #expect(try await store.dump() == before)
        // What SQLite refuses inside a transaction is said as SQLite says it, not as another
        // process's lock.
        let checkpoint = try await store.sync("exec", "PRAGMA wal_checkpoint(TRUNCATE)")
        expectFailure(checkpoint, "SQL failed, nothing was applied: database table is locked")
        #expect(!checkpoint.stderr.contains("another"), "\(checkpoint)")
        expectFailure(try await store.sync("exec", "VACUUM"), "cannot VACUUM from within a transaction")
    }

    @Test func theStoreCanComeFromTheEnvironment() async throws {
        let store = try await CLIStore()
        let result = try await SyncProcess.run(
            ["exec", "INSERT INTO items(id) VALUES ('env')"], environment: ["SYNC_STORE": store.path])
        #expect(result.exitCode == 0, "\(result)")
        let log = try await SyncProcess.run(["log", "--json"], environment: ["SYNC_STORE": store.path])
        #expect(try LogDocument.parse(log.stdout).map { $0.changes.map(\.key) } == [[["id": .text("env")]]])
        // --store wins over the environment.
        let other = try await SyncProcess.run(
            ["log", "--json", "--store", store.path], environment: ["SYNC_STORE": store.directory.file("elsewhere.db")])
        #expect(other.exitCode == 0, "\(other)")
    }

    @Test func withoutAStoreItSaysHowToGiveOne() async throws {
        expectFailure(try await SyncProcess.run(["exec", "SELECT 1"]), "no store given", hint: "SYNC_STORE")
    }

    @Test func aMissingStoreIsNotCreated() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("missing.db")
        expectFailure(
            try await SyncProcess.run(["exec", "--store", path, "SELECT 1"]), "no store at \(path)", hint: "sync init")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A folder given as the store, by a one-character relative path (which trapped in
    /// Foundation's path code), and a store in a folder that does not exist are each reported as
    /// what they are.
    @Test func aFolderOrAMissingFolderIsNamedForWhatItIs() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("j"), withIntermediateDirectories: false)
        for store in ["j", "j/"] {
            let result = try await CommandRunner.run(
                "/bin/sh",
                ["-c", "cd \"$0\" && exec \"$1\" status --store \"$2\"", directory.path, SyncProcess.path, store])
            expectFailure(result, "\(store): is a folder, not a store file")
        }
        let missing = directory.file("nodir")
        expectFailure(
            try await SyncProcess.run(["init", "--store", missing + "/x.db", "--replica", "x"]),
            "its folder \(missing) does not exist", hint: "mkdir -p \(missing)")
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func aPlainSQLiteDatabaseIsNotAStore() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("plain.db")
        try await SQLiteShell.execute(path, "CREATE TABLE t(id TEXT PRIMARY KEY)")
        let before = try await SQLiteShell.dump(path)
        expectFailure(
            try await SyncProcess.run(["exec", "--store", path, "INSERT INTO t VALUES ('x')"]), "not a Tidemark store",
            hint: "sync init")
        #expect(try await SQLiteShell.dump(path) == before)
    }
}
