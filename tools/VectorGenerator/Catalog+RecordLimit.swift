/// §4.1 R36: the TEXT and BLOB values of one change or row state, key values included, total at
/// most 64 MiB. Each vector goes one byte past the limit with values that are each within the
/// single-value limit (so R16 does not apply), and is re-chained, re-attested and re-signed, so
/// the record limit is the only check that refuses it. The values are zero bytes in compressed
/// frames of at most 16 MiB, so the files stay near 65 KB.
///
/// This group comes last so that adding it left the tcIds of every earlier vector unchanged.
extension Catalog {
    /// 64 MiB, `maxRecordValueBytes` of bundle.md §4.1, written from the specification.
    static let recordValueLimit = 64 * 1024 * 1024

    mutating func addRecordLimit() {
        let flags = ["Record", "Resigned", "Limits", "Compressed", "FrameSplit"]
        let half = Self.recordValueLimit / 2

        var d = alice(1...1, tables: [World.notes], compressed: true)
        d.transactions[0].changes[0].columns = [
            Column("body", .blob([UInt8](repeating: 0, count: half))), Column("pinned", .integer(0)),
            Column("title", .blob([UInt8](repeating: 0, count: half + 1))),
        ]
        Self.cutEvery16MiB(&d)
        invalid(
            "record-too-large",
            "An insert whose BLOB values `body` (32 MiB) and `title` (32 MiB + 1 byte) total 64 MiB + 1 byte: each is within "
                + "the value limit, together they pass the record limit at the length of `title`, before its bytes",
            flags: flags, error: "record-too-large", d)

        d = snapshot()
        d.compressTransactions = { _ in true }
        // tags (note, name) = (1, 'work'): the key's TEXT counts, so 4 + (64 MiB − 3) = 64 MiB + 1.
        d.rowStates[2].generation = 5
        d.rowStates[2].cells = [
            .init(
                "color", .blob([UInt8](repeating: 0, count: Self.recordValueLimit - 3)),
                clock: (World.time(20), w.alice.id))
        ]
        Self.cutEvery16MiB(&d)
        invalid(
            "snapshot-row-too-large",
            "A live row state of `tags` keyed (1, 'work') whose `color` BLOB is 64 MiB − 3 bytes: with the 4 bytes of its TEXT "
                + "key value the row holds 64 MiB + 1 byte, past the record limit at the length of `color`",
            flags: ["Snapshot"] + flags, error: "record-too-large", d)
    }

    /// Starts a new TRANSACTIONS frame every 16 MiB of the record stream, the largest payload a
    /// frame may inflate to (§3.2).
    static func cutEvery16MiB(_ d: inout Draft) {
        let length =
            d.transactions.reduce(0) { $0 + $1.encoded.count } + d.rowStates.reduce(0) { $0 + $1.encoded.count }
        let frame = 16 * 1024 * 1024
        d.cuts = Array(stride(from: frame, to: length, by: frame))
    }
}
