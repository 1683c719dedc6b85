import Foundation
import GRDB
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// Capture: what the triggers record for library writes and for writes by other SQLite clients,
/// and how sealing turns them into transactions.
@Suite struct CaptureTests {
    typealias Change = RowChange
    typealias Column = History.Column

    static let apple: [Column] = [
        Column("id", .text("a")), Column("name", .text("Äpfel 🍎")), Column("qty", .integer(Int64.max)),
        Column("price", .real(2.5)), Column("photo", .blob([0x00, 0xff, 0x10])), Column("note", .null),
    ]

    @Test func insertUpdateDeleteAreRecordedWithTheirValues() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let (_, inserted) = try store.write(author: "alice", contextName: "ui") { db in
            try db.execute(sql: "INSERT INTO items VALUES ('a', 'Äpfel 🍎', 9223372036854775807, 2.5, x'00ff10', NULL)")
        }
        #expect(inserted?.sequence == 1)
        #expect(inserted?.changeCount == 1)
        let (_, updated) = try store.write(author: "bob") { db in
            // price is set to the value it already has: not part of the change.
            try db.execute(sql: "UPDATE items SET qty = 3, price = 2.5, note = 'n' WHERE id = 'a'")
        }
        #expect(updated?.sequence == 2)
        let (_, deleted) = try store.write(contextName: "cleanup") { db in
            try db.execute(sql: "DELETE FROM items WHERE id = 'a'")
        }
        #expect(deleted?.sequence == 3)

        let history = try store.fetchHistory()
        #expect(history.map(\.sequence) == [1, 2, 3])
        #expect(history.allSatisfy { $0.origin == store.replica.id })
        #expect(history.map(\.author) == ["alice", "bob", nil])
        #expect(history.map(\.contextName) == ["ui", nil, "cleanup"])
        #expect(history.allSatisfy { $0.processID == ProcessInfo.processInfo.processIdentifier })
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.timestamp < $1.timestamp })

        let key = [Column("id", .text("a"))]
        #expect(history[0].changes.rows == [Change(type: .insert, table: "items", key: key, values: Self.apple)])
        #expect(
            history[1].changes.rows == [
                Change(
                    type: .update, table: "items", key: key,
                    values: [Column("qty", .integer(3)), Column("note", .text("n"))])
            ])
        #expect(history[1].changes[0].updatedColumns == ["qty", "note"])
        // The tombstone keeps the key and the preserved column only.
        #expect(
            history[2].changes.rows == [
                Change(
                    type: .delete, table: "items", key: key, values: [],
                    tombstone: [Column("id", .text("a")), Column("name", .text("Äpfel 🍎"))])
            ])
        #expect(history[2].changes[0].updatedColumns == [])
    }

    /// The library refuses an author or context name a bundle cannot carry before it writes
    /// anything: once in history, every peer would refuse this replica's bundles.
    @Test func anAuthorshipABundleCannotCarryIsRefused() throws {
        let fixture = try StoreFixture()
        for (author, context) in [("", nil), (nil, ""), (String(repeating: "a", count: 4097), nil)]
            as [(String?, String?)]
        {
            #expect {
                _ = try fixture.store.write(author: author, contextName: context) { db in
                    try db.execute(sql: "INSERT INTO items(id) VALUES ('a')")
                }
            } throws: { error in
                guard case StoreError.invalidAuthorship = error else { return false }
                return true
            }
        }
        #expect(try fixture.store.fetchHistory().isEmpty)
        #expect(try fixture.store.execute(sql: "SELECT count(*) FROM items").0.first?.rows == [[.integer(0)]])
    }

    /// SQLite lets a rowid table's key be NULL unless it is declared NOT NULL. No replica could
    /// tell such rows apart, and their changes used to stop every later push: an insert with a
    /// NULL key, or a key changed to NULL, is refused with the statement rolled back, whichever
    /// client writes, and a table that holds such rows is not tracked until they have a key.
    @Test func aNullKeyIsRefusedAndWritesGoOnReplicating() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let sqlite = try DatabaseQueue(path: fixture.path)
        for sql in [
            "INSERT INTO items(id, name) VALUES (NULL, 'no key')",
            "INSERT INTO items(id, name) VALUES ('a', 'A'), (NULL, 'no key')",
        ] {
            #expect(throws: (any Error).self, "\(sql)") { try sqlite.write { db in try db.execute(sql: sql) } }
            #expect(throws: StoreError.self, "\(sql)") { _ = try store.execute(sql: sql) }
        }
        _ = try store.execute(sql: "INSERT INTO items(id, name) VALUES ('a', 'A')")
        #expect(throws: StoreError.self) { _ = try store.execute(sql: "UPDATE items SET id = NULL WHERE id = 'a'") }
        #expect(throws: (any Error).self) {
            try sqlite.write { db in try db.execute(sql: "UPDATE items SET id = NULL WHERE id = 'a'") }
        }
        #expect(try store.execute(sql: "SELECT id FROM items").0.first?.rows == [[.text("a")]])
        let directory = try TemporaryDirectory("tidemark-null-key")
        _ = try store.exportBundle(
            since: .zero, to: directory.file("a.tmb"), key: KeyFile.load(KeyFile.defaultPath(forStore: fixture.path)))
        #expect(try store.fetchHistory().flatMap(\.changes).count == 1)

        try sqlite.write { db in
            try db.execute(sql: "CREATE TABLE loose(k TEXT PRIMARY KEY, v); INSERT INTO loose VALUES (NULL, 1)")
        }
        #expect {
            try store.migrate(Store.Migration(track: ["loose"]))
        } throws: { error in
            guard case StoreError.untrackableTable("loose", let reason, _) = error else { return false }
            return reason.contains("NULL key")
        }
    }

    /// A row that holds a NULL key all the same (written while another client had removed the
    /// capture triggers) was never replicated: its update and delete are not recorded, so they
    /// stop no export, and giving it a key starts its life.
    @Test func aRowThatHoldsANullKeyAllTheSameStopsNoExport() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        let sqlite = try DatabaseQueue(path: fixture.path)
        try sqlite.write { db in
            let insert = try #require(
                try String.fetchOne(
                    db, sql: "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'tidemark%insert'"))
            try db.execute(sql: "DROP TRIGGER \(insert)")
            try db.execute(sql: "INSERT INTO items(id, name) VALUES (NULL, 'x'), (NULL, 'y')")
        }
        _ = try store.execute(sql: "UPDATE items SET qty = 1 WHERE name = 'x'")
        _ = try store.execute(sql: "DELETE FROM items WHERE name = 'y'")
        _ = try store.execute(sql: "UPDATE items SET id = 'b' WHERE name = 'x'")
        let changes = try store.fetchHistory().flatMap(\.changes)
        #expect(changes.map(\.type) == [.insert])
        #expect(changes.first?.key == [Column("id", .text("b"))])
        let directory = try TemporaryDirectory("tidemark-null-key-row")
        _ = try store.exportBundle(
            since: .zero, to: directory.file("a.tmb"), key: KeyFile.load(KeyFile.defaultPath(forStore: fixture.path)))
    }

    @Test func updateToNullIsAChange() throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id, note) VALUES ('a', 'x')")
        let (_, commit) = try fixture.store.execute(sql: "UPDATE items SET note = NULL WHERE id = 'a'")
        #expect(commit?.changeCount == 1)
        let change = try #require(try fixture.store.fetchHistory().last?.changes.first)
        #expect(change.type == .update)
        #expect(change.values == [Column("note", .null)])
        #expect(change.updatedColumns == ["note"])
    }

    @Test func compositeKeyTombstoneHasTheKeyOnly() throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO tags VALUES ('a', 'fruit', 0.5)")
        _ = try fixture.store.execute(sql: "UPDATE tags SET weight = 2 WHERE item = 'a'")
        _ = try fixture.store.execute(sql: "DELETE FROM tags")
        let changes = try fixture.store.fetchHistory().flatMap(\.changes)
        let key = [Column("item", .text("a")), Column("tag", .text("fruit"))]
        #expect(
            changes.rows == [
                Change(type: .insert, table: "tags", key: key, values: key + [Column("weight", .real(0.5))]),
                Change(type: .update, table: "tags", key: key, values: [Column("weight", .integer(2))]),
                Change(type: .delete, table: "tags", key: key, values: [], tombstone: key),
            ])
    }

    @Test func updateThatChangesNoValueRecordsNoChange() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        _ = try store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('a', 'A', 5), ('b', 'B', 1)")
        let before = try store.currentToken()

        let (_, noOp) = try store.execute(sql: "UPDATE items SET name = name, qty = qty, note = NULL")
        #expect(noOp == nil)
        #expect(try store.currentToken() == before)

        // Only the row whose value differs is recorded.
        let (_, partial) = try store.execute(sql: "UPDATE items SET qty = 5")
        #expect(partial?.changeCount == 1)
        let last = try #require(try store.fetchHistory().last)
        #expect(
            last.changes.rows == [
                Change(
                    type: .update, table: "items", key: [Column("id", .text("b"))], values: [Column("qty", .integer(5))]
                )
            ])
    }

    @Test func writeThatChangesNothingRecordsNoTransaction() throws {
        let fixture = try StoreFixture(tables: ["items"], preserve: [])
        let store = fixture.store
        let before = try store.currentToken()
        let (value, commit) = try store.write { _ in 42 }
        #expect(value == 42)
        #expect(commit == nil)
        #expect(try store.execute(sql: "DELETE FROM items WHERE 0").1 == nil)
        #expect(try store.execute(sql: "SELECT count(*) FROM items").1 == nil)
        // Writes to a table that is not tracked are not history.
        #expect(try store.execute(sql: "INSERT INTO tags VALUES ('a', 'b', 1)").1 == nil)
        #expect(try store.fetchHistory().isEmpty)
        #expect(try store.currentToken() == before)
        #expect(before == .zero)
    }

    @Test func primaryKeyChangeIsDeleteOfTheOldKeyAndInsertOfTheNew() throws {
        let fixture = try StoreFixture()
        let store = fixture.store
        _ = try store.execute(sql: "INSERT INTO items VALUES ('b', 'Birne', 1, 0.25, NULL, 'n')")
        let (_, commit) = try store.execute(sql: "UPDATE items SET id = 'c', qty = 2 WHERE id = 'b'")
        #expect(commit?.changeCount == 2)
        let last = try #require(try store.fetchHistory().last)
        #expect(
            last.changes.rows == [
                Change(
                    type: .delete, table: "items", key: [Column("id", .text("b"))], values: [],
                    tombstone: [Column("id", .text("b")), Column("name", .text("Birne"))]),
                Change(
                    type: .insert, table: "items", key: [Column("id", .text("c"))],
                    values: [
                        Column("id", .text("c")), Column("name", .text("Birne")), Column("qty", .integer(2)),
                        Column("price", .real(0.25)), Column("photo", .null), Column("note", .text("n")),
                    ]),
            ])

        // Same for one column of a composite key.
        _ = try store.execute(sql: "INSERT INTO tags VALUES ('c', 'old', 1)")
        _ = try store.execute(sql: "UPDATE tags SET tag = 'new' WHERE item = 'c'")
        let rekey = try #require(try store.fetchHistory().last)
        #expect(rekey.changes.map(\.type) == [.delete, .insert])
        #expect(
            rekey.changes.map(\.keyValues) == [
                ["item": .text("c"), "tag": .text("old")], ["item": .text("c"), "tag": .text("new")],
            ])
    }

    static let storageClassValues: [SQLValue] = [
        .integer(Int64.max), .integer(Int64.min), .integer(0), .integer(-1), .real(0.1), .real(-2.5e-300), .real(1e300),
        .real(3), .text("héllo wörld 🌊 ✓ 中文"), .text(""), .blob([0x00, 0x01, 0xff]), .null,
    ]

    /// Every value comes back from history with the storage class and bits it was written with.
    @Test(arguments: storageClassValues)
    func valuesKeepTheirStorageClass(value: SQLValue) throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.write { db in
            try db.execute(sql: "INSERT INTO items(id, note) VALUES ('v', ?)", arguments: [value])
        }
        _ = try fixture.store.write { db in
            try db.execute(
                sql: "UPDATE items SET note = ?, name = 'changed' WHERE id = 'v'",
                arguments: [value == .null ? SQLValue.integer(1) : .null])
        }
        _ = try fixture.store.write { db in
            try db.execute(sql: "UPDATE items SET note = ? WHERE id = 'v'", arguments: [value])
        }
        let changes = try fixture.store.fetchHistory().flatMap(\.changes)
        #expect(changes.count == 3)
        #expect(changes.first?.valueMap["note"] == value)
        #expect(changes.last?.valueMap == ["note": value])
    }

    /// Typed columns apply SQLite's affinity before capture: history holds what the table holds.
    @Test func affinityIsAppliedBeforeCapture() throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id, qty, price, name) VALUES ('a', '12', 3, 7)")
        let change = try #require(try fixture.store.fetchHistory().first?.changes.first)
        #expect(change.valueMap["qty"] == .integer(12))
        #expect(change.valueMap["price"] == .real(3))
        #expect(change.valueMap["name"] == .text("7"))
    }

    /// An update that changes only a value's storage class (INTEGER 1 to REAL 1.0, in an untyped
    /// column that keeps both) is a change: `SQLValue` and every replica's table tell them apart.
    @Test func storageClassOnlyChangeIsRecorded() throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id, note) VALUES ('a', 1)")
        let (_, commit) = try fixture.store.execute(sql: "UPDATE items SET note = 1.0 WHERE id = 'a'")
        #expect(try typeOfNote(fixture) == "real")
        #expect(commit?.changeCount == 1)
        #expect(try fixture.store.fetchHistory().last?.changes.first?.valueMap == ["note": .real(1)])
    }

    /// The update trigger compares storage classes except where affinity stores every equal
    /// number in one class (REAL) or turns numbers into text (TEXT).
    @Test(arguments: [
        ("", true), ("BLOB", true), ("any", true), ("INTEGER", true), ("BIGINT", true), ("NUMERIC", true),
        ("DECIMAL(10,2)", true),
        ("BOOLEAN", true), ("DATE", true), ("VARCHAR(20)", false), ("TEXT", false), ("CLOB", false), ("REAL", false),
        ("DOUBLE PRECISION", false), ("FLOAT", false),
    ])
    func storageClassIsComparedUnlessAffinityRulesItOut(declaredType: String, compared: Bool) {
        #expect(CaptureTriggers.keepsStorageClassOfEqualNumbers(declaredType: declaredType) == compared)
    }

    /// Writing 1.0 over 1 in INTEGER and NUMERIC columns stores 1 again: no change to record. In a
    /// REAL column 1 is stored as 1.0 both times.
    @Test func anEqualNumberOfAnotherClassIsNoChangeWhereAffinityConvertsIt() throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id, qty, price) VALUES ('a', 1, 2)")
        let (_, commit) = try fixture.store.execute(sql: "UPDATE items SET qty = 1.0, price = 2 WHERE id = 'a'")
        #expect(commit == nil)
    }

    /// INTEGER affinity leaves -9223372036854775808.0 a real (it converts only strictly inside the
    /// 64-bit range), and `IS` finds it equal to the integer: the class change is still recorded.
    @Test func aClassChangeAtTheEdgeOfTheIntegerRangeIsRecorded() throws {
        let fixture = try StoreFixture()
        _ = try fixture.store.execute(sql: "INSERT INTO items(id, qty) VALUES ('a', -9223372036854775808)")
        let (_, commit) = try fixture.store.execute(sql: "UPDATE items SET qty = -9223372036854775808.0 WHERE id = 'a'")
        #expect(commit?.changeCount == 1)
        #expect(
            try fixture.store.fetchHistory().last?.changes.first?.valueMap == ["qty": .real(-9223372036854775808.0)])
    }

    /// A column's collation does not hide a change: 'abc' to 'ABC' in a NOCASE column is recorded.
    /// (A key with a collation is not tracked: `StoreInitTests`.)
    @Test func aChangeOfCaseInANoCaseColumnIsRecorded() throws {
        let fixture = try StoreFixture(
            schema: "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT COLLATE NOCASE);", preserve: [])
        _ = try fixture.store.execute(sql: "INSERT INTO items(id, name) VALUES ('k', 'abc')")
        let (_, commit) = try fixture.store.execute(sql: "UPDATE items SET name = 'ABC' WHERE id = 'k'")
        #expect(commit?.changeCount == 1)
        #expect(try fixture.store.fetchHistory().last?.changes.first?.valueMap == ["name": .text("ABC")])
    }

    private func typeOfNote(_ fixture: StoreFixture) throws -> String {
        try fixture.store.execute(sql: "SELECT typeof(note) FROM items WHERE id = 'a'").0.first?.rows.first?.first
            .flatMap {
                if case .text(let t) = $0 { return t }
                return nil
            } ?? "?"
    }

    @Test func writesByTheSQLiteShellAreSealedWhenHistoryIsRead() async throws {
        let fixture = try StoreFixture()
        try await SQLiteShell.execute(
            fixture.path, "INSERT INTO items(id, qty) VALUES ('x', 1); INSERT INTO items(id, qty) VALUES ('y', 2);")
        try await SQLiteShell.execute(fixture.path, "UPDATE items SET qty = 3 WHERE id = 'x'")

        let status = try fixture.store.status()
        #expect(status.pendingChangeCount == 3)
        #expect(status.transactionCount == 0)

        let history = try fixture.store.fetchHistory()
        try #require(history.count == 1)
        let sealed = history[0]
        #expect(sealed.sequence == 1)
        #expect(sealed.author == nil && sealed.contextName == nil && sealed.processID == nil)
        #expect(sealed.changes.map(\.type) == [.insert, .insert, .update])
        #expect(sealed.changes.map(\.keyValues) == [["id": .text("x")], ["id": .text("y")], ["id": .text("x")]])
        #expect(sealed.changes[2].valueMap == ["qty": .integer(3)])
        #expect(try fixture.store.status().pendingChangeCount == 0)
    }

    @Test func foreignWritesAreSealedSeparatelyBeforeALibraryWrite() async throws {
        let fixture = try StoreFixture()
        try await SQLiteShell.execute(fixture.path, "INSERT INTO items(id) VALUES ('shell')")
        let (_, commit) = try fixture.store.write(author: "app") { db in
            try db.execute(sql: "INSERT INTO items(id) VALUES ('app')")
        }
        #expect(commit?.sequence == 2)
        #expect(commit?.changeCount == 1)
        let history = try fixture.store.fetchHistory()
        #expect(history.map(\.author) == [nil, "app"])
        #expect(history.map { $0.changes.map(\.keyValues) } == [[["id": .text("shell")]], [["id": .text("app")]]])
    }

    /// A failing body leaves neither rows nor history behind.
    @Test func failedWriteAppliesNothing() throws {
        struct Stop: Error {}
        let fixture = try StoreFixture()
        #expect(throws: Stop.self) {
            try fixture.store.write { db in
                try db.execute(sql: "INSERT INTO items(id) VALUES ('a')")
                throw Stop()
            }
        }
        #expect(throws: StoreError.self) {
            try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('b'); INSERT INTO nope VALUES (1)")
        }
        #expect(try fixture.store.execute(sql: "SELECT count(*) FROM items").0.first?.rows == [[.integer(0)]])
        #expect(try fixture.store.fetchHistory().isEmpty)
        #expect(try fixture.store.status().pendingChangeCount == 0)
    }

    @Test func transactionControlInExecuteIsRefused() throws {
        let fixture = try StoreFixture()
        #expect(throws: StoreError.transactionControlNotAllowed(statement: "COMMIT")) {
            try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a'); COMMIT")
        }
        #expect(try fixture.store.fetchHistory().isEmpty)
    }

    /// Timestamps keep increasing when the store is reopened with a wall clock that went back.
    @Test func timestampsNeverGoBackwardsWhenTheWallClockDoes() throws {
        let fixture = try StoreFixture(options: Store.Options(clock: FixedWallClock(milliseconds: 2_000_000)))
        let (_, first) = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        let (_, second) = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('b')")
        let earlier = try fixture.reopen(options: Store.Options(clock: FixedWallClock(milliseconds: 1_000_000)))
        let (_, third) = try earlier.execute(sql: "INSERT INTO items(id) VALUES ('c')")
        #expect(first?.timestamp == HLCTimestamp(milliseconds: 2_000_000, counter: 0))
        #expect(second?.timestamp == HLCTimestamp(milliseconds: 2_000_000, counter: 1))
        #expect(third?.timestamp == HLCTimestamp(milliseconds: 2_000_000, counter: 2))
        #expect(third?.sequence == 3)
        #expect(try earlier.fetchHistory().map(\.timestamp) == [first, second, third].map { $0!.timestamp })
    }

    /// A wall clock past the last time a timestamp holds (year 6429) would wrap the write's timestamp
    /// to a negative one, which every peer refuses, with every later transaction: the write is
    /// refused instead, and nothing is written; once the clock is right, writes go on.
    @Test func aWriteUnderAClockPastTheLastTimestampIsRefused() throws {
        let past = HLCTimestamp.maxMilliseconds + 1_000
        let fixture = try StoreFixture(options: Store.Options(clock: FixedWallClock(milliseconds: past)))
        let before = try StoreSnapshot.everything(of: fixture.path)
        #expect {
            _ = try fixture.store.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        } throws: { error in
            guard case StoreError.clockOutOfRange = error else { return false }
            return "\(error)".contains("past the last time a timestamp can hold")
        }
        #expect(try StoreSnapshot.everything(of: fixture.path) == before)
        let right = try fixture.reopen(options: Store.Options(clock: FixedWallClock(milliseconds: 2_000_000)))
        let (_, written) = try right.execute(sql: "INSERT INTO items(id) VALUES ('a')")
        #expect(written?.timestamp == HLCTimestamp(milliseconds: 2_000_000, counter: 0))
    }
}
