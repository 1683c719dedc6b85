import GRDB
import TidemarkCore

/// The per-column clocks of one row-metadata row, stored in its `c` column when the row's columns
/// were set by different writes (Bookkeeping.rowMetadataTable).
///
/// One BLOB, not a pair of columns per slot, so that a migration that adds a column leaves the
/// row-metadata table as it is: no `ALTER TABLE`, no wider schema for SQLite to parse again after
/// every later one. Entries are keyed by slot, so a row saved before a column was added or dropped
/// reads the same: a slot the table no longer has is skipped, one it gained has no clock.
///
/// | Field | Bytes | Description |
/// |---|---|---|
/// | slot | 1–10 | unsigned LEB128 |
/// | timestamp | 8 | the clock's packed hybrid timestamp, big-endian two's complement |
/// | origin | 1–10 | unsigned LEB128: the writer's number in `tidemark_origins` |
///
/// repeated once per column that has a clock, in increasing slot order; a row with no such column
/// stores NULL.
enum ColumnClocks {
    /// One column's clock as stored: the slot, the packed timestamp and the origin's number.
    struct Entry: Equatable {
        var slot: Int
        var timestamp: Int64
        var origin: Int64
    }

    /// The BLOB holding `entries`, which must be in increasing slot order.
    static func encode(_ entries: [Entry]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.count * 11)
        for entry in entries {
            Varint.append(UInt64(entry.slot), to: &bytes)
            let timestamp = UInt64(bitPattern: entry.timestamp)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: timestamp >> shift))
            }
            Varint.append(UInt64(bitPattern: entry.origin), to: &bytes)
        }
        return bytes
    }

    /// Calls `body` with each entry of `bytes`, in order. Throws SQLite's corruption error, naming
    /// `table` and the byte offset, when the BLOB is not one `encode` makes.
    static func decode(
        _ bytes: UnsafeRawBufferPointer, table: String, _ body: (Entry) throws -> Void
    ) throws {
        var offset = 0
        func damaged(_ what: String) -> DatabaseError {
            DatabaseError(
                resultCode: .SQLITE_CORRUPT,
                message: "the row metadata of table '\(table)' holds damaged column clocks: \(what) at byte \(offset)")
        }
        func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while offset < bytes.count, shift < 64 {
                let byte = bytes[offset]
                offset += 1
                // The tenth byte holds the 64th bit alone.
                if shift == 63, byte > 1 { throw damaged("a number past 64 bits") }
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            throw damaged("a truncated number")
        }
        var previous = -1
        while offset < bytes.count {
            let slot = try varint()
            guard slot < UInt64(Int32.max) else { throw damaged("a slot past any table's columns") }
            guard Int(slot) > previous else { throw damaged("a slot out of order") }
            guard bytes.count - offset >= 8 else { throw damaged("a truncated timestamp") }
            var timestamp: UInt64 = 0
            for _ in 0..<8 {
                timestamp = timestamp << 8 | UInt64(bytes[offset])
                offset += 1
            }
            let origin = try varint()
            previous = Int(slot)
            try body(Entry(slot: Int(slot), timestamp: Int64(bitPattern: timestamp), origin: Int64(bitPattern: origin)))
        }
    }
}
