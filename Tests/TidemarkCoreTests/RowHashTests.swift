import Testing
import TidemarkCore

/// The row hash (Protocol/exchange.md §8.1): SipHash-2-4 under the digest key, the same whether the
/// row's encoding is hashed whole or taken piece by piece as it is made (`RowDigest.Hasher`).
@Suite struct RowHashTests {
    /// The test message of `count` bytes: byte j is 7j + 3, modulo 256.
    static func message(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) } }

    /// Computed by a separate implementation of the SipHash paper (checked against the paper's own
    /// test values) with the key "tidemark digest1".
    static let known: [(Int, UInt64)] = [
        (0, 0x1619_00fc_36c4_c454), (1, 0xb88e_a91d_c6cc_987c), (7, 0x5221_5682_74e2_e19f),
        (8, 0x9385_3a05_9d32_cb2d), (9, 0x966a_3bce_a0c3_3244), (15, 0x28e5_64d5_780f_bff8),
        (16, 0xb984_d5df_5da9_d519), (17, 0x18a2_9e19_5e78_9c40), (31, 0x6091_fa7a_e000_88c7),
        (64, 0xd4e9_3e90_a2f4_3334), (255, 0x3c70_b599_da05_6e2c), (256, 0x3e74_f27d_aaf9_9a76),
        (300, 0x9c6e_7977_6841_6424),
    ]

    @Test func aWholeMessageHashesAsSipHash24UnderTheDigestKey() {
        for (count, hash) in Self.known {
            #expect(Self.message(count).withUnsafeBytes { RowDigest.rowHash($0) } == hash, "\(count) bytes")
        }
    }

    /// Pieces of every length from 0 to 17 bytes, and every split of a message in two and in three.
    @Test func aMessageTakenInPiecesHashesAsTheWhole() {
        func pieces(_ bytes: [UInt8], cutAt cuts: [Int]) -> UInt64 {
            var hasher = RowDigest.Hasher()
            var start = 0
            for cut in cuts + [bytes.count] {
                bytes[start..<cut].withUnsafeBytes { hasher.append($0) }
                start = cut
            }
            return hasher.finalize()
        }
        for (count, hash) in Self.known {
            let bytes = Self.message(count)
            for size in 0...17 {
                let cuts = size == 0 ? [0, 0] : Array(stride(from: size, to: count, by: size))
                #expect(pieces(bytes, cutAt: cuts) == hash, "\(count) bytes in pieces of \(size)")
            }
        }
        for count in [40, 70] {
            let bytes = Self.message(count)
            let whole = bytes.withUnsafeBytes { RowDigest.rowHash($0) }
            for i in 0...count {
                #expect(pieces(bytes, cutAt: [i]) == whole, "\(count) bytes cut at \(i)")
                for j in i...count where pieces(bytes, cutAt: [i, j]) != whole {
                    Issue.record("\(count) bytes cut at \(i) and \(j)")
                }
            }
        }
    }

    /// A hasher is a value: a copy goes on from where it was copied, and neither disturbs the other
    /// (the copies stay small enough to share one buffer, until one writes), also after a reset.
    @Test func aCopiedHasherGoesOnOnItsOwn() {
        let bytes = Self.message(150)
        let other: [UInt8] = bytes.reversed()
        func hash(_ slice: [UInt8]) -> UInt64 { slice.withUnsafeBytes { RowDigest.rowHash($0) } }
        var first = RowDigest.Hasher()
        bytes[..<100].withUnsafeBytes { first.append($0) }
        var second = first
        bytes[100...].withUnsafeBytes { second.append($0) }
        other[..<1].withUnsafeBytes { first.append($0) }
        #expect(first.finalize() == hash(Array(bytes[..<100] + other[..<1])))
        #expect(second.finalize() == hash(bytes))
        var third = second
        third.reset()
        other[..<7].withUnsafeBytes { third.append($0) }
        #expect(third.finalize() == hash(Array(other[..<7])))
        #expect(second.finalize() == hash(bytes))
    }

    /// A row's values appended one by one, after byte pieces of any length, hash as its encoding does.
    @Test func valuesAppendedOneByOneHashAsTheRowEncoding() {
        let columns: [(name: String, value: SQLValue)] = [
            ("a", .integer(-300)), ("b", .real(-0.0)), ("c", .text("tëxt of some length")), ("d", .blob([0, 1, 2])),
            ("e", .integer(Int64.max)), ("f", .real(1.5e300)), ("g", .text("")), ("h", .blob([])),
        ]
        for skipped in 0...columns.count {
            let row = Array(columns.dropFirst(skipped))
            var hasher = RowDigest.Hasher()
            var prefix: [UInt8] = []
            RowDigest.encodeRow(table: "items", columns: [], into: &prefix)
            prefix.withUnsafeBytes { hasher.append($0) }
            for (index, column) in row.enumerated() {
                var name: [UInt8] = []
                RowDigest.encodeRow(table: column.name, columns: [], into: &name)
                name.withUnsafeBytes { hasher.append($0) }
                switch (column.value, index % 2) {
                case (_, 0): hasher.appendValue(column.value)
                case (.integer(let v), _): hasher.appendInteger(v)
                case (.real(let v), _): hasher.appendReal(v)
                case (.text(let s), _): Array(s.utf8).withUnsafeBytes { hasher.appendText($0) }
                case (.blob(let b), _): b.withUnsafeBytes { hasher.appendBlob($0) }
                case (.null, _): break
                }
            }
            #expect(
                hasher.finalize() == RowDigest.rowHash(table: "items", columns: row), "without the first \(skipped)")
        }
    }
}
