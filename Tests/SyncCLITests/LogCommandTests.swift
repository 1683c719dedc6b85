import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync log`: what it prints for writes from every kind of writer, `--since`, filters, and
/// refused tokens.
@Suite struct LogCommandTests {
    /// Writes through `sync exec`, through the library in this process, and through the `sqlite3`
    /// shell all appear, each with its kind, key, values, updated columns and tombstones.
    @Test func writesFromExecTheLibraryAndTheSQLiteShellAllAppear() async throws {
        let store = try await CLIStore()
        try await store.exec(
            "INSERT INTO items VALUES ('a', 'Äpfel 🍎', 9223372036854775807, 2.5, x'00ff10', NULL); INSERT INTO items(id, name, qty) VALUES ('b', 'Birne', 1)",
            author: "alice", context: "cli")
        let library = try Store.open(store.path)
        let (_, commit) = try library.execute(
            sql: "UPDATE items SET qty = -7, price = 2.5, note = 'ñ' WHERE id = 'a'", author: "bob", contextName: "app")
        #expect(commit?.sequence == 2)
        try await SQLiteShell.execute(
            store.path, "DELETE FROM items WHERE id = 'a'; INSERT INTO tags VALUES ('b', 'fruit', 0.5);")
        try await store.exec("UPDATE items SET id = 'c' WHERE id = 'b'", author: "alice")
        // Writes that change nothing: no transactions.
        try await store.exec("UPDATE items SET name = name, qty = qty")
        try await store.exec("DELETE FROM items WHERE id = 'nonexistent'")
        #expect(try library.execute(sql: "UPDATE items SET note = NULL WHERE note IS NULL").1 == nil)

        let log = try await store.log()
        let replica = try #require(try await store.status()["id"] as? String)
        #expect(log.map(\.seq) == [1, 2, 3, 4])
        #expect(log.allSatisfy { $0.replica == replica })
        #expect(log.map(\.author) == ["alice", "bob", nil, "alice"])
        #expect(log.map(\.context) == ["cli", "app", nil, nil])
        #expect(log[0].pid != nil && log[3].pid != nil)
        #expect(log[1].pid == Int64(ProcessInfo.processInfo.processIdentifier))
        #expect(log[2].pid == nil)
        #expect(zip(log, log.dropFirst()).allSatisfy { $0.hlc < $1.hlc && $0.timestamp <= $1.timestamp })
        let id = try #require(Replica.ID(hex: replica))
        #expect(
            try log.map { try History.Token(parsing: $0.token) }
                == (1...4).map { History.Token(sequences: [id: Int64($0)]) })

        let nulls: [String: SQLValue] = ["price": .null, "photo": .null, "note": .null]
        #expect(
            log[0].changes == [
                LoggedChange(
                    type: "insert", table: "items", key: ["id": .text("a")],
                    values: [
                        "id": .text("a"), "name": .text("Äpfel 🍎"), "qty": .integer(9_223_372_036_854_775_807),
                        "price": .real(2.5),
                        "photo": .blob([0x00, 0xff, 0x10]), "note": .null,
                    ]),
                LoggedChange(
                    type: "insert", table: "items", key: ["id": .text("b")],
                    values: ["id": .text("b"), "name": .text("Birne"), "qty": .integer(1)].merging(nulls) { $1 }),
            ])
        #expect(
            log[1].changes == [
                LoggedChange(
                    type: "update", table: "items", key: ["id": .text("a")],
                    values: ["qty": .integer(-7), "note": .text("ñ")],
                    columns: ["qty", "note"])
            ])
        #expect(
            log[2].changes == [
                LoggedChange(
                    type: "delete", table: "items", key: ["id": .text("a")],
                    tombstone: ["id": .text("a"), "name": .text("Äpfel 🍎")]),
                LoggedChange(
                    type: "insert", table: "tags", key: ["item": .text("b"), "tag": .text("fruit")],
                    values: ["item": .text("b"), "tag": .text("fruit"), "weight": .real(0.5)]),
            ])
        #expect(
            log[3].changes == [
                LoggedChange(
                    type: "delete", table: "items", key: ["id": .text("b")],
                    tombstone: ["id": .text("b"), "name": .text("Birne")]),
                LoggedChange(
                    type: "insert", table: "items", key: ["id": .text("c")],
                    values: ["id": .text("c"), "name": .text("Birne"), "qty": .integer(1)].merging(nulls) { $1 }),
            ])

        // The text form shows the same history, one header line per transaction.
        let text = try await store.sync("log")
        #expect(text.exitCode == 0 && text.stderr.isEmpty, "\(text)")
        let headers = text.stdoutLines.filter { !$0.hasPrefix("  ") }
        #expect(headers.count == 4)
        #expect(
            headers.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == [
                "laptop #1", "laptop #2", "laptop #3", "laptop #4",
            ])
        #expect(headers[0].hasSuffix("author=alice  context=cli"))
        // A name that is not one word is quoted as a value is, a line break as char(10): it cannot read as more
        // fields, or as another transaction.
        try await store.exec(
            "UPDATE items SET qty = 2 WHERE id = 'c'", author: "ana  context=editor",
            context: "x\nlaptop #99  author=admin")
        let forged = try await store.sync("log")
        let last = try #require(forged.stdoutLines.filter { !$0.hasPrefix("  ") }.last)
        #expect(
            last.hasSuffix("author='ana  context=editor'  context='x' || char(10) || 'laptop #99  author=admin'"),
            "\(forged)")
        #expect(forged.stdoutLines.filter { !$0.hasPrefix("  ") }.count == 5, "\(forged)")
        #expect(headers[2].hasSuffix("(external)"))
        #expect(text.stdoutLines.contains("  delete items [id='a'] tombstone name='Äpfel 🍎'"))
        #expect(text.stdoutLines.contains("  update items [id='a'] qty=-7 note='ñ'"))
    }

    static let valueRows: [(id: String, sql: String, value: SQLValue, json: String)] = [
        ("imax", "9223372036854775807", .integer(Int64.max), "9223372036854775807"),
        ("imin", "-9223372036854775808", .integer(Int64.min), "-9223372036854775808"),
        ("zero", "0", .integer(0), "0"),
        ("tenth", "0.1", .real(0.1), "0.1"),
        ("three", "3.0", .real(3), "3.0"),
        ("huge", "1e300", .real(1e300), "1e+300"),
        ("tiny", "-2.5e-300", .real(-2.5e-300), "-2.5e-300"),
        ("inf", "9e999", .real(.infinity), #"{"real":"Infinity"}"#),
        ("minusinf", "-9e999", .real(-.infinity), #"{"real":"-Infinity"}"#),
        ("text", "'héllo \"wörld\" 🌊 ✓ 中文'", .text("héllo \"wörld\" 🌊 ✓ 中文"), #""héllo \"wörld\" 🌊 ✓ 中文""#),
        ("digits", "'123'", .text("123"), #""123""#),
        ("blob", "x'00ff10'", .blob([0x00, 0xff, 0x10]), #"{"base64":"AP8Q"}"#),
        ("textblob", "CAST('abc' AS BLOB)", .blob([0x61, 0x62, 0x63]), #"{"base64":"YWJj"}"#),
        ("null", "NULL", .null, "null"),
    ]

    /// Values keep their storage class through `log --json`: 64-bit integers exact, REAL as a
    /// number with a fraction or exponent, TEXT with any Unicode, BLOB as base64, NULL as null.
    @Test func valuesKeepTheirStorageClass() async throws {
        let store = try await CLIStore()
        let rows = Self.valueRows.map { "('\($0.id)', \($0.sql))" }.joined(separator: ", ")
        try await store.exec("INSERT INTO items(id, note) VALUES \(rows)")
        // Updates carry the value the same way.
        try await SQLiteShell.execute(store.path, "UPDATE items SET note = 'x'")
        try await store.exec(
            Self.valueRows.map { "UPDATE items SET note = \($0.sql) WHERE id = '\($0.id)';" }.joined(separator: "\n"))

        let raw = try await store.sync("log", "--json")
        #expect(raw.exitCode == 0, "\(raw)")
        let log = try LogDocument.parse(raw.stdout)
        try #require(log.count == 3)
        let inserted = Dictionary(uniqueKeysWithValues: log[0].changes.map { ($0.key["id"]!, $0.values?["note"]) })
        let updated = Dictionary(uniqueKeysWithValues: log[2].changes.map { ($0.key["id"]!, $0.values) })
        for row in Self.valueRows {
            #expect(inserted[.text(row.id)] == row.value, "insert \(row.id)")
            #expect(
                raw.stdout.contains(
                    #"{"id":"\#(row.id)","name":null,"qty":null,"price":null,"photo":null,"note":\#(row.json)}"#),
                "\(row.id)")
            #expect(updated[.text(row.id)] == ["note": row.value], "update \(row.id)")
        }
        // The text form writes SQL that reads back as the same value: SQLite's own `quote()`
        // writes an infinity as `Inf`, which reads as a name.
        let text = try await store.sync("log")
        #expect(text.stdoutLines.contains("  update items [id='inf'] note=9e999"), "\(text)")
        #expect(text.stdoutLines.contains("  update items [id='minusinf'] note=-9e999"), "\(text)")
    }

    @Test func sinceReturnsExactlyTheTransactionsAfterTheToken() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('1')")
        try await store.exec("INSERT INTO items(id) VALUES ('2')")
        let afterTwo = try await store.token()
        try await store.exec("INSERT INTO items(id) VALUES ('3')")
        try await SQLiteShell.execute(store.path, "INSERT INTO items(id) VALUES ('4')")
        try await store.exec("INSERT INTO items(id) VALUES ('5')")

        let all = try await store.log()
        #expect(all.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(all[1].token == afterTwo)
        #expect(try await store.log("--since", afterTwo).map(\.seq) == [3, 4, 5])
        for (index, transaction) in all.enumerated() {
            #expect(
                try await store.log("--since", transaction.token) == Array(all.dropFirst(index + 1)),
                "after #\(transaction.seq)")
        }
        // The current token: nothing after it, in either form.
        let now = try await store.token()
        #expect(now == all.last?.token)
        #expect(try await store.log("--since", now).isEmpty)
        let text = try await store.sync("log", "--since", now)
        #expect(text.exitCode == 0 && text.stdout.isEmpty && text.stderr.isEmpty, "\(text)")
        let json = try await store.sync("log", "--since", now, "--json")
        #expect(json.stdout == "[]\n")
    }

    @Test func filtersByAuthorContextAndTable() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('1')", author: "alice", context: "ui")
        try await store.exec("INSERT INTO tags VALUES ('1', 't', 1)", author: "bob", context: "ui")
        try await store.exec(
            "INSERT INTO items(id) VALUES ('2'); INSERT INTO tags VALUES ('2', 't', 1)", author: "alice",
            context: "sync")
        #expect(try await store.log("--author", "alice").map(\.seq) == [1, 3])
        #expect(try await store.log("--context", "ui").map(\.seq) == [1, 2])
        #expect(try await store.log("--author", "alice", "--context", "ui").map(\.seq) == [1])
        let tags = try await store.log("--table", "tags")
        #expect(tags.map(\.seq) == [2, 3])
        #expect(tags.allSatisfy { $0.changes.allSatisfy { $0.table == "tags" } })
        expectFailure(try await store.sync("log", "--table", "nope"), "no table named 'nope'")
        let file = store.directory.file("notes.sql")
        try "CREATE TABLE notes(id TEXT PRIMARY KEY);".write(toFile: file, atomically: false, encoding: .utf8)
        #expect(try await store.sync("migrate", file).exitCode == 0)
        expectFailure(
            try await store.sync("log", "--table", "notes"),
            "table 'notes' was never tracked, so history holds no change to it",
            hint: "`sync migrate --store STORE --track notes` tracks it")
    }

    @Test func aTokenIntoDeletedHistoryIsExpired() async throws {
        let store = try await CLIStore()
        for i in 1...4 { try await store.exec("INSERT INTO items(id) VALUES ('\(i)')") }
        let tokens = try await store.log().map(\.token)
        let library = try Store.open(store.path)
        #expect(try library.deleteHistory(before: try History.Token(parsing: tokens[1])) == 2)

        let expired = try await store.sync("log", "--since", tokens[0])
        expectFailure(expired, "history token expired", hint: "without --since")
        #expect(try await store.log().map(\.seq) == [3, 4])
        #expect(try await store.log("--since", tokens[1]).map(\.seq) == [3, 4])
        #expect(try await store.log("--since", tokens[2]).map(\.seq) == [4])

        // The library says the same.
        #expect(
            throws: StoreError.historyTokenExpired(token: tokens[0], replica: library.replica.id, prunedThrough: 2)
        ) {
            try library.fetchHistory(HistoryRequest(after: try History.Token(parsing: tokens[0])))
        }
    }

    @Test func malformedTokensAreRefused() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('1')")
        let good = try await store.token()
        var tampered = Array(good)
        let last = tampered.count - 2
        tampered[last] = tampered[last] == "A" ? "B" : "A"
        let before = try await store.dump()
        for (token, message) in [
            ("garbage", "not a history token"),
            ("tm1.", "too short for its checksum"),
            ("tm1.AAAA", "too short for its checksum"),
            ("tm1.!!!!", "not base64url"),
            (String(tampered), "malformed history token"),
            (String(good.dropLast(5)), "malformed history token"),
        ] {
            let result = try await store.sync("log", "--since", token)
            expectFailure(result, message, hint: token == "garbage" ? "sync token" : "copy a whole token")
        }
        #expect(try await store.dump() == before)
    }

    /// A well-formed token that claims more of this replica's history than the replica made, or
    /// that comes from another store (it names a replica this one neither holds history of nor
    /// trusts): log and export refuse it, and change nothing.
    @Test func aForeignTokenIsRefused() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('1')")
        let other = try await CLIStore(replica: "other")
        try await other.exec("INSERT INTO items(id) VALUES ('x')")
        let hex = try #require(try await store.status()["id"] as? String)
        let id = try #require(Replica.ID(hex: hex))
        let before = try await store.dump()
        var tokens = [Int64(2), 1_000_000_000].map { History.Token(sequences: [id: $0]).description }
        tokens.append(try await other.sync("token").stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        for foreign in tokens {
            expectFailure(
                try await store.sync("log", "--since", foreign), "not from this store's history", hint: "sync token")
            expectFailure(
                try await store.sync("export", "--since", foreign, "--out", store.directory.file("x.tmb")),
                "not from this store's history")
        }
        #expect(try await store.dump() == before)
        #expect(try await store.log().map(\.seq) == [1])
        #expect(!FileManager.default.fileExists(atPath: store.directory.file("x.tmb")))
    }
}
