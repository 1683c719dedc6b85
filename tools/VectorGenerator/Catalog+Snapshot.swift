/// §4.4 snapshot bundles (kind 2): row states instead of transactions, no ranges, no attestations.
/// The invalid ones are re-signed, so the named record check is the only one that refuses them.
extension Catalog {
    /// Carol's snapshot of the three tables: live rows with per-column clocks (one column without a
    /// clock), a key-only row, and a tombstone with an even generation and no columns.
    func snapshot() -> Draft {
        let everything = Token([(w.alice, 4), (w.bob, 3), (w.carol, 1)])
        var d = Draft(
            world: w, sender: w.carol, kind: 2, created: World.time(100), since: .zero, through: everything,
            tables: [World.notes, World.tags, World.labels], transactions: [])
        d.compressTransactions = { _ in false }
        d.rowStates = [
            RowStateRecord(
                table: "notes", generation: 3, key: [Column("id", .integer(1))],
                cells: [
                    .init("body", .text("back again"), clock: (World.time(45), w.bob.id)),
                    .init("pinned", .integer(1), clock: (World.time(45, counter: 1), w.alice.id)),
                    .init("title", .text("hello, world"), clock: nil),
                ]),
            RowStateRecord(
                table: "notes", generation: 1, key: [Column("id", .integer(100))],
                cells: [
                    .init("body", .null, clock: (World.time(30), w.bob.id)),
                    .init("pinned", .integer(0), clock: (World.time(30), w.bob.id)),
                    .init("title", .text("groceries"), clock: (World.time(31, counter: 2), w.carol.id)),
                ]),
            RowStateRecord(
                table: "tags", generation: 4, key: [Column("note", .integer(1)), Column("name", .text("work"))],
                cells: []),
            RowStateRecord(table: "labels", generation: 1, key: [Column("name", .text("work"))], cells: []),
        ]
        return d
    }

    mutating func addSnapshot() {
        let base = snapshot()
        let aliceFirst = w.tx(w.alice, 1).encoded
        valid(
            "snapshot",
            "A snapshot (kind 2, §4.4): live rows with per-column clocks, a column without a clock (presence 0), a key-only "
                + "row and a tombstone (even generation, no columns); no ranges, no attestations",
            flags: ["Snapshot", "Uncompressed"], base)
        var empty = base
        empty.rowStates = []
        valid(
            "snapshot-empty", "A snapshot with no row states: no TRANSACTIONS frame", flags: ["Snapshot", "Empty"],
            empty)

        let flags = ["Snapshot", "Record", "Resigned"]
        var d = base
        d.rowStates[2].cells = [.init("color", .text("red"), clock: (World.time(20), w.alice.id))]
        invalid(
            "snapshot-tombstone-with-columns", "A tombstone (generation 4) that carries a column", flags: flags,
            error: "columns-not-canonical", d)
        d = base
        let unclocked = Self.column("title", .text("hello, world"))
        d.editRecords = { $0[0].replaceUnique(unclocked + [0], with: unclocked + [2]) }
        invalid(
            "snapshot-bad-clock-presence", "A column's clock-present byte is 02", flags: flags,
            error: "bad-presence-byte", d)
        d = base
        d.rowStates[1].generation = 0
        invalid("snapshot-generation-zero", "A row state with generation 0", flags: flags, error: "bad-generation", d)
        d = base
        d.rowStates[1].cells.reverse()
        invalid(
            "snapshot-columns-not-sorted", "A live row's columns in descending order (title, pinned, body)",
            flags: flags,
            error: "columns-not-canonical", d)
        d = base
        d.editRecords = { $0.insert(aliceFirst, at: 0) }
        invalid(
            "snapshot-with-transaction-record",
            "Alice's transaction #1 before the row states of a snapshot (no range lists it); read as a row state, its "
                + "origin id's first byte is a table-name length and the bytes after it are not UTF-8",
            flags: flags, error: "invalid-utf8", d)

        d = alice(1...1, tables: [World.notes])
        d.editRecords = { $0.append(base.rowStates[0].encoded) }
        invalid(
            "changes-with-row-state",
            "A changes bundle (kind 1) whose record stream holds a row state after Alice's #1; read as a transaction record, it "
                + "names an origin without a range",
            flags: flags, error: "outside-ranges", d)

        let everything = Token([(w.alice, 4), (w.bob, 3), (w.carol, 1)])
        d = Draft(
            world: w, sender: w.bob, kind: 3, created: World.time(81), since: everything, through: everything,
            tables: [World.notes, World.tags, World.labels], transactions: [])
        d.editRecords = { $0 = [aliceFirst] }
        invalid(
            "watermark-with-records", "A watermark (kind 3, no ranges) with a TRANSACTIONS frame holding Alice's #1",
            flags: ["Watermark", "Record", "Resigned"], error: "columns-not-canonical", d)
    }
}
