import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// A replica joining from a snapshot takes each row state as a new row, without first reading the
/// metadata it does not have: these are the cases where a row state is not new after all, or does
/// not fit, and must merge as any other.
@Suite struct SnapshotJoinTests {
    /// The table schemas a crafted snapshot declares: the sender's, which are the receiver's.
    static func schemas(_ replica: TestReplica, _ names: [String]) throws -> [BundleHeader.TableSchema] {
        try names.map { name in
            let table = try #require(replica.store.trackedTable(named: name))
            return BundleHeader.TableSchema(name: table.name, keyColumns: table.keyColumns, columns: table.columns)
        }
    }

    /// Writes a snapshot of `states`, signed by `sender`, and imports it into `receiver`.
    static func join(
        _ receiver: TestReplica, from sender: TestReplica, tables: [String], states: [RowState], in group: ExchangeGroup
    ) throws {
        let bytes = try BundleCrafter.snapshot(
            key: sender.key, senderName: sender.name, tables: try schemas(receiver, tables), states: states)
        let path = group.directory.file("crafted-\(UUID().uuidString).tms")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        _ = try receiver.store.importBundle(at: path)
    }

    /// A clock of `sender` at `milliseconds`.
    static func clock(_ sender: TestReplica, _ milliseconds: Int64) -> MergeClock {
        MergeClock(
            timestamp: HLCTimestamp(milliseconds: milliseconds, counter: 0),
            origin: Replica.ID(publicKey: sender.key.publicKey))
    }

    /// A snapshot names a row twice (no reader rule refuses it): the second state merges into the
    /// first column by column, as it would into a row the store held before, and the row digest
    /// the import keeps is the one its rows give.
    @Test func aRowStateForARowTheSnapshotAlreadyGaveMergesColumnByColumn() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        func state(name: String, at nameClock: Int64, qty: Int64, at qtyClock: Int64) -> RowState {
            RowState(
                table: "items", key: [History.Column("id", .text("x"))], generation: 1,
                cells: [
                    RowState.Cell(name: "name", value: .text(name), clock: Self.clock(a, nameClock)),
                    RowState.Cell(name: "qty", value: .integer(qty), clock: Self.clock(a, qtyClock)),
                ]
                    + ["price", "photo", "note"].map {
                        RowState.Cell(name: $0, value: .null, clock: Self.clock(a, 1_000))
                    })
        }
        try Self.join(
            b, from: a, tables: ["items"],
            states: [
                state(name: "first", at: 2_000, qty: 1, at: 4_000),
                state(name: "second", at: 3_000, qty: 2, at: 1_500),
            ], in: group)
        let rows = try #require(try b.tables()["items"]).rows
        #expect(rows.count == 1)
        #expect(rows.first?[1] == .text("second"), "the later name")
        #expect(rows.first?[2] == .integer(1), "the later quantity, from the first state")
        #expect(try b.store.rowDigest().digest == b.tables().rowDigest)
    }

    /// Two row states of a joining snapshot claim one UNIQUE value: the row whose value was
    /// written later is deleted and listed, whichever state comes first, and the row digest the
    /// import keeps is the one its rows give.
    @Test(arguments: [false, true])
    func rowStatesThatClashOnAUniqueValueAreSettledInEitherOrder(laterFirst: Bool) throws {
        let group = try ExchangeGroup(["a", "b"], schema: ConflictResolutionTests.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        func user(_ id: String, at milliseconds: Int64) -> RowState {
            RowState(
                table: "users", key: [History.Column("id", .text(id))], generation: 1,
                cells: [
                    RowState.Cell(name: "email", value: .text("same@example.com"), clock: Self.clock(a, milliseconds)),
                    RowState.Cell(name: "nick", value: .text(id), clock: Self.clock(a, milliseconds)),
                ])
        }
        let (earlier, later) = (user("u1", at: 2_000), user("u2", at: 3_000))
        try Self.join(
            b, from: a, tables: ["users", "spans", "posts"], states: laterFirst ? [later, earlier] : [earlier, later],
            in: group)
        #expect(try b.tables()["users"]?.rows.map { $0[0] } == [.text("u1")])
        #expect(try b.store.conflicts().contains { $0.table == "users" && $0.key == #"{"id":"u2"}"# })
        #expect(try b.store.rowDigest().digest == b.tables().rowDigest)
    }

    /// The row states of `count` items `i00`, `i01`, …, each a new life written whole at one clock.
    static func items(_ sender: TestReplica, count: Int) -> [RowState] {
        (0..<count).map { i in
            let clock = Self.clock(sender, 2_000 + Int64(i))
            return RowState(
                table: "items", key: [History.Column("id", .text(String(format: "i%02d", i)))], generation: 1,
                cells: [
                    RowState.Cell(name: "name", value: .text("item \(i)"), clock: clock),
                    RowState.Cell(name: "qty", value: .integer(Int64(i)), clock: clock),
                ] + ["price", "photo", "note"].map { RowState.Cell(name: $0, value: .null, clock: clock) })
        }
    }

    /// New rows are written many to a statement; one among them that the store knows deleted (its
    /// tombstone outranks the snapshot's life) must not come back, and the rest are written.
    @Test func aRowTheStoreHoldsDeletedAmongNewRowsStaysDeleted() throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i07', 'mine')")
        _ = try b.store.execute(sql: "DELETE FROM items WHERE id = 'i07'")
        try Self.join(b, from: a, tables: ["items"], states: Self.items(a, count: 40), in: group)
        let ids = try #require(try b.tables()["items"]).rows.map { $0[0] }
        #expect(ids == (0..<40).filter { $0 != 7 }.map { .text(String(format: "i%02d", $0)) })
        #expect(try b.store.rowDigest().digest == b.tables().rowDigest)
    }

    /// A new row among others that breaks a CHECK is settled as on its own (deleted and listed),
    /// and the rows beside it are written.
    @Test func aNewRowThatBreaksACheckAmongOthersIsSettledAndTheOthersWritten() throws {
        let group = try ExchangeGroup(["a", "b"], schema: ConflictResolutionTests.schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        let spans = (0..<40).map { i in
            let clock = Self.clock(a, 2_000)
            return RowState(
                table: "spans", key: [History.Column("id", .text(String(format: "s%02d", i)))], generation: 1,
                cells: [
                    RowState.Cell(name: "lo", value: .integer(i == 7 ? 5 : 1), clock: clock),
                    RowState.Cell(name: "hi", value: .integer(i == 7 ? 3 : 10), clock: clock),
                ])
        }
        try Self.join(b, from: a, tables: ["users", "spans", "posts"], states: spans, in: group)
        let ids = try #require(try b.tables()["spans"]).rows.map { $0[0] }
        #expect(ids == (0..<40).filter { $0 != 7 }.map { .text(String(format: "s%02d", $0)) })
        let conflict = try #require(try b.store.conflicts().first { $0.table == "spans" })
        #expect(conflict.key == #"{"id":"s07"}"# && conflict.kind == "check", "\(conflict)")
        #expect(try b.store.rowDigest().digest == b.tables().rowDigest)
    }

    /// An app trigger that changes a row as it is inserted, named with its table's name in another
    /// case or made TEMP on the store's connection: the joined rows are hashed as the trigger left
    /// them, so the row digest the import keeps is the one its rows give.
    @Test(arguments: [
        "CREATE TRIGGER app_stamp AFTER INSERT ON ITEMS BEGIN UPDATE items SET note = 'stamped' WHERE id = NEW.id; END",
        "CREATE TEMP TRIGGER app_stamp AFTER INSERT ON main.items BEGIN UPDATE items SET note = 'stamped' WHERE id = NEW.id; END",
    ])
    func rowsAnAppTriggerChangesAsTheyAreInsertedAreHashedAsLeft(trigger: String) throws {
        let group = try ExchangeGroup(["a", "b"])
        let (a, b) = (group["a"], group["b"])
        _ = try b.store.execute(sql: trigger)
        // A pull's watermark keeps the digest from here on: the import adds the rows' hashes to it.
        try group.pull("b", prune: false)
        try Self.join(b, from: a, tables: ["items"], states: Self.items(a, count: 40), in: group)
        let rows = try #require(try b.tables()["items"]).rows
        #expect(rows.count == 40 && rows.allSatisfy { $0[5] == .text("stamped") })
        #expect(try b.store.rowDigest().digest == b.tables().rowDigest)
    }

    /// A replica that never wrote joins from a snapshot with a row its own CHECK refuses: the
    /// conflict is noted at the clock the snapshot leaves it with, not at 1970.
    @Test func aConflictMetJoiningFromASnapshotIsNotedAtTheSnapshotsClock() throws {
        let directory = try TemporaryDirectory("tidemark-snapshot-join")
        let a = try TestReplica(
            "a", in: directory, schema: "CREATE TABLE items(id TEXT PRIMARY KEY, qty INTEGER);", preserve: [])
        let b = try TestReplica(
            "b", in: directory, schema: "CREATE TABLE items(id TEXT PRIMARY KEY, qty INTEGER CHECK (qty >= 0));",
            preserve: [])
        try TestReplica.trustEachOther([a, b])
        let (_, written) = try a.store.execute(sql: "INSERT INTO items VALUES ('i1', -1), ('i2', 2)")
        let path = directory.file("a.tms")
        _ = try a.store.exportSnapshot(to: path, key: a.key)
        _ = try b.store.importBundle(at: path)
        let conflict = try #require(try b.store.conflicts().first)
        #expect(conflict.kind == "check")
        #expect(conflict.detected >= (try #require(written)).timestamp, "\(conflict.detected)")
    }
}
