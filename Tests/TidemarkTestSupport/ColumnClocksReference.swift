/// The per-column clocks a row-metadata row keeps in its `c` BLOB, decoded apart from the library:
/// per column, the slot (unsigned LEB128), the packed timestamp (8 bytes, big-endian) and the
/// writer's number in `tidemark_origins` (unsigned LEB128).
public enum ColumnClocksReference {
    /// The entries of `bytes`, in order: slot, packed timestamp, writer number.
    public static func entries(_ bytes: [UInt8]) -> [(slot: Int, timestamp: Int64, origin: Int64)] {
        var at = 0
        func varint() -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = bytes[at]
                at += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }
        var entries: [(slot: Int, timestamp: Int64, origin: Int64)] = []
        while at < bytes.count {
            let slot = Int(varint())
            let timestamp = bytes[at..<at + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            at += 8
            entries.append((slot, Int64(bitPattern: timestamp), Int64(bitPattern: varint())))
        }
        return entries
    }
}
