import GRDB
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// The BLOB of per-column clocks in row metadata: what `encode` writes, `decode` and an
/// independent reader read back; what no encoder writes is refused as damage.
@Suite struct ColumnClocksTests {
    static let entries: [ColumnClocks.Entry] = [
        .init(slot: 0, timestamp: 0, origin: 1),
        .init(slot: 1, timestamp: 1_764_000_000_000 << 16 | 7, origin: 127),
        .init(slot: 63, timestamp: -1, origin: 128),
        .init(slot: 1963, timestamp: .max, origin: .max),
    ]

    @Test func whatIsEncodedDecodesToTheSameEntries() throws {
        let bytes = ColumnClocks.encode(Self.entries)
        var decoded: [ColumnClocks.Entry] = []
        try bytes.withUnsafeBytes { try ColumnClocks.decode($0, table: "items") { decoded.append($0) } }
        #expect(decoded == Self.entries)
        #expect(
            ColumnClocksReference.entries(bytes).map {
                ColumnClocks.Entry(slot: $0.slot, timestamp: $0.timestamp, origin: $0.origin)
            }
                == Self.entries)
        // Slot 0: one byte, then 8, then the origin's one byte.
        #expect(Array(bytes.prefix(10)) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    }

    @Test(
        arguments: [
            ([0x05, 0, 0, 0], "a truncated timestamp"),
            ([0x05, 0, 0, 0, 0, 0, 0, 0, 0], "a truncated number"),
            ([0x80], "a truncated number"),
            ([0x05, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 1], "a slot out of order"),
            ([0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 1], "a slot past any table's columns"),
            (
                [0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                "a number past 64 bits"
            ),
        ] as [([UInt8], String)])
    func damageIsRefusedNamingTheTable(bytes: [UInt8], what: String) {
        #expect {
            try bytes.withUnsafeBytes { try ColumnClocks.decode($0, table: "items") { _ in } }
        } throws: { error in
            guard let error = error as? DatabaseError, error.resultCode == .SQLITE_CORRUPT else { return false }
            return error.message?.contains("table 'items'") == true && error.message?.contains(what) == true
        }
    }
}
