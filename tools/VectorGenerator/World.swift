import Foundation

/// The fixed scenario every vector draws from: four replicas, their tables, and the histories of
/// the three that write. A bundle takes a slice of these histories, so ranges that do not start at
/// #1 continue real chain hashes.
struct World {
    let alice = Identity("alice")
    let bob = Identity("bob")
    let carol = Identity("carol")
    /// Never trusted, never an origin: signs what it should not.
    let mallory = Identity("mallory")

    var everyone: [Identity] { [alice, bob, carol, mallory] }

    func identity(id: [UInt8]) -> Identity? { everyone.first { $0.id == id } }

    // MARK: - Tables

    static let notes = Table(name: "notes", keyColumns: ["id"], columns: ["body", "id", "pinned", "title"])
    /// `notes` as version 1 of the vectors' lineages names it: with the column `color` added.
    static let notesWithColor = Table(
        name: "notes", keyColumns: ["id"], columns: ["body", "color", "id", "pinned", "title"])
    /// A composite key whose key order is not name order.
    static let tags = Table(name: "tags", keyColumns: ["note", "name"], columns: ["color", "name", "note"])
    /// A table with key columns only.
    static let labels = Table(name: "labels", keyColumns: ["name"], columns: ["name"])
    static let samples = Table(
        name: "samples", keyColumns: ["id"],
        columns: (["id"] + Samples.columns.map(\.name)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
    /// 63 columns: more than one 64-bit mask would hold, were a reader to keep one per change.
    static let wide = Table(
        name: "wide", keyColumns: ["k"], columns: (1...62).map { String(format: "c%02d", $0) } + ["k"])

    // MARK: - Time

    /// 2025-11-21T00:00:00Z.
    static let epoch: Int64 = 1_763_683_200_000
    /// A packed HLC timestamp `seconds` after the epoch.
    static func time(_ seconds: Int64, counter: Int64 = 0) -> Int64 { (epoch + seconds * 1000) << 16 | counter }

    // MARK: - Histories

    func history(_ origin: Identity) -> [Transaction] {
        switch origin.name {
        case "alice": return aliceHistory
        case "bob": return bobHistory
        case "carol": return carolHistory
        default: return []
        }
    }

    func tx(_ origin: Identity, _ sequence: Int64) -> Transaction { history(origin)[Int(sequence) - 1] }

    /// The chain hash after `origin`'s transaction `sequence` (the genesis hash for 0).
    func head(_ origin: Identity, through sequence: Int64) -> [UInt8] {
        var head = Wire.genesis(origin.id)
        for t in history(origin).prefix(Int(max(0, sequence))) { head = Wire.sha256(head + t.encoded) }
        return head
    }

    private var aliceHistory: [Transaction] {
        [
            Transaction(
                origin: alice, sequence: 1, timestamp: Self.time(10), author: "app", contextName: "editor",
                processID: 4242,
                changes: [
                    Change(
                        kind: .insert, table: "notes", key: [Column("id", .integer(1))],
                        columns: [
                            Column("body", .text("First note")), Column("pinned", .integer(0)),
                            Column("title", .text("hello")),
                        ])
                ]),
            Transaction(
                origin: alice, sequence: 2, timestamp: Self.time(20), author: nil, contextName: nil, processID: nil,
                changes: [
                    Change(
                        kind: .update, table: "notes", key: [Column("id", .integer(1))],
                        columns: [Column("title", .text("hello, world"))])
                ]),
            Transaction(
                origin: alice, sequence: 3, timestamp: Self.time(30), author: "app", contextName: nil, processID: -1,
                changes: [
                    Change(
                        kind: .insert, table: "tags",
                        key: [Column("note", .integer(1)), Column("name", .text("work"))],
                        columns: [Column("color", .text("blue"))]),
                    Change(kind: .insert, table: "labels", key: [Column("name", .text("work"))], columns: []),
                ]),
            Transaction(
                origin: alice, sequence: 4, timestamp: Self.time(30, counter: 1), author: "app", contextName: "cleanup",
                processID: 4242,
                changes: [
                    Change(
                        kind: .delete, table: "notes", key: [Column("id", .integer(1))],
                        columns: [Column("title", .text("hello, world"))]),
                    Change(
                        kind: .delete, generation: 4, table: "tags",
                        key: [Column("note", .integer(1)), Column("name", .text("work"))],
                        columns: []),
                ]),
            Transaction(
                origin: alice, sequence: 5, timestamp: Self.time(50), author: "importer", contextName: nil,
                processID: 7,
                changes: [
                    Change(kind: .insert, table: "samples", key: [Column("id", .integer(1))], columns: Samples.columns),
                    Change(
                        kind: .insert, generation: 5, table: "samples", key: [Column("id", .integer(-2))],
                        columns: Samples.secondRow),
                ]),
        ]
    }

    private var bobHistory: [Transaction] {
        [
            Transaction(
                origin: bob, sequence: 1, timestamp: Self.time(15), author: "phone", contextName: nil, processID: 31337,
                changes: [
                    Change(
                        kind: .insert, table: "notes", key: [Column("id", .integer(100))],
                        columns: [
                            Column("body", .null), Column("pinned", .integer(1)), Column("title", .text("from bob")),
                        ])
                ]),
            Transaction(
                origin: bob, sequence: 2, timestamp: Self.time(25), author: "sync-check", contextName: nil,
                processID: nil, changes: []),
            Transaction(
                origin: bob, sequence: 3, timestamp: Self.time(35), author: nil, contextName: "widget", processID: nil,
                changes: [
                    Change(
                        kind: .update, table: "notes", key: [Column("id", .integer(100))],
                        columns: [
                            Column("body", .text(String(repeating: "The tide rises, the tide falls. ", count: 64))),
                            Column("pinned", .integer(0)),
                        ])
                ]),
        ]
    }

    private var carolHistory: [Transaction] {
        [
            Transaction(
                origin: carol, sequence: 1, timestamp: Self.time(12), author: "laptop", contextName: nil, processID: 99,
                changes: [
                    Change(
                        kind: .insert, table: "notes", key: [Column("id", .integer(200))],
                        columns: [
                            Column("body", .text("")), Column("pinned", .integer(0)),
                            Column("title", .text("Grüße, 世界 🌊")),
                        ])
                ]),
            Transaction(
                origin: carol, sequence: 2, timestamp: Self.time(40), author: String(repeating: "é", count: 2048),
                contextName: "limits",
                processID: Int32.max,
                changes: [
                    Change(
                        kind: .insert, table: "wide", key: [Column("k", .text(String(repeating: "k", count: 300)))],
                        columns: (1...62).map { Column(String(format: "c%02d", $0), .integer(Int64($0) * 1_000_003)) })
                ]),
        ]
    }
}

/// Every kind of value, in column-name order (bytewise UTF-8).
enum Samples {
    static let columns: [Column] = [
        Column("blob_bytes", .blob([0x00, 0xff, 0x10, 0x80])),
        Column("blob_empty", .blob([])),
        Column("int_max", .integer(.max)),
        Column("int_min", .integer(.min)),
        Column("int_minus_1", .integer(-1)),
        Column("int_minus_65", .integer(-65)),
        Column("int_plus_64", .integer(64)),
        Column("int_zero", .integer(0)),
        Column("null", .null),
        Column("real_half", .real(0.5)),
        Column("real_inf", .real(.infinity)),
        Column("real_max", .real(.greatestFiniteMagnitude)),
        Column("real_minus_inf", .real(-.infinity)),
        Column("real_minus_zero", .real(-0.0)),
        Column("real_nan", .real(.nan)),
        Column("real_nan_payload", .real(Double(bitPattern: 0xfff8_0000_dead_beef))),
        Column("real_one", .real(1.0)),
        Column("real_subnormal", .real(.leastNonzeroMagnitude)),
        Column("real_tenth", .real(0.1)),
        Column("real_zero", .real(0.0)),
        Column("text_ascii", .text("plain")),
        Column("text_combining", .text("e\u{301}")),
        Column("text_controls", .text("tab\tnewline\nquote\"backslash\\nul\u{0}")),
        Column("text_empty", .text("")),
        Column("text_unicode", .text("Grüße, 世界 🌊")),
    ]

    /// The same columns with other values of other classes.
    static let secondRow: [Column] = columns.enumerated().map { i, c in
        switch i % 5 {
        case 0: return Column(c.name, .null)
        case 1: return Column(c.name, .integer(Int64(i) * -1_000_000_007))
        case 2: return Column(c.name, .real(-Double(i) / 7))
        case 3: return Column(c.name, .text("row 2 · \(c.name)"))
        default: return Column(c.name, .blob(Array(c.name.utf8)))
        }
    }
}
