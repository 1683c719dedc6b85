/// A digest of a replica's replicated rows (Protocol/exchange.md §8): per table, how many rows it
/// holds and the sum, modulo 2^64, of one hash per row. A sum does not depend on the order rows
/// were written in, and a replica keeps it up to date by subtracting a row's old hash and adding
/// its new one, so no write needs a scan. Two replicas at the same token that hold the same rows
/// have equal digests; a table whose entries differ holds different rows.
///
/// It detects rows that went astray (a write made with the capture triggers removed, a merge
/// defect), not forgeries: the hash is keyed with a published key.
public struct RowDigest: Sendable, Hashable {
    /// One table's entry.
    public struct Table: Sendable, Hashable {
        /// The table name.
        public var name: String
        /// How many rows it holds.
        public var rows: UInt64
        /// The sum of its rows' hashes, modulo 2^64.
        public var sum: UInt64

        /// Creates an entry.
        public init(name: String, rows: UInt64, sum: UInt64) {
            self.name = name
            self.rows = rows
            self.sum = sum
        }
    }

    /// The entries, in ascending bytewise order of name; a table with no entry holds no rows.
    public private(set) var tables: [Table]

    /// Creates a digest; entries for empty tables are left out.
    public init(_ tables: [Table]) {
        self.tables = tables.filter { $0.rows != 0 || $0.sum != 0 }
            .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// The entry of `name`, or an empty one.
    public subscript(name: String) -> Table {
        tables.first { $0.name == name } ?? Table(name: name, rows: 0, sum: 0)
    }

    /// The tables whose entries differ between the two digests, in ascending order of name.
    public func differingTables(from other: RowDigest) -> [String] {
        let names = Set(tables.map(\.name)).union(other.tables.map(\.name))
        return names.filter { self[$0] != other[$0] }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The hash of one row (exchange.md §8.1): SipHash-2-4 under the digest key of `message`, the row's
    /// encoding as `RowDigest.encodeRow` writes it.
    public static func rowHash(_ message: UnsafeRawBufferPointer) -> UInt64 {
        SipHash24.hash(message, k0: key.0, k1: key.1)
    }

    /// The row's encoding (exchange.md §8.1): the table name, then each non-NULL column as its name
    /// and value, in ascending bytewise order of column name. `columns` must be in that order,
    /// without the cells that hold their column's hash default (`isLiteralDefault`).
    public static func encodeRow(table: String, columns: [(name: String, value: SQLValue)], into out: inout [UInt8]) {
        RecordEncoding.string(table, &out)
        for column in columns where column.value != .null {
            RecordEncoding.string(column.name, &out)
            RecordEncoding.value(column.value, &out)
        }
    }

    /// Appends `value` as the row encoding has it: a bundle value (bundle.md §4.1).
    public static func appendValue(_ value: SQLValue, to out: inout [UInt8]) { RecordEncoding.value(value, &out) }

    /// Appends an INTEGER as `appendValue` does, for callers that read values where they lie.
    public static func appendInteger(_ value: Int64, to out: inout [UInt8]) { RecordEncoding.integer(value, &out) }

    /// Appends a REAL as `appendValue` does.
    public static func appendReal(_ value: Double, to out: inout [UInt8]) { RecordEncoding.real(value, &out) }

    /// Appends a TEXT given as its UTF-8 bytes, every one of them, as `appendValue` does.
    public static func appendText(_ utf8: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        RecordEncoding.bytes(.text, utf8, &out)
    }

    /// Appends a BLOB given as its bytes, as `appendValue` does.
    public static func appendBlob(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        RecordEncoding.bytes(.blob, bytes, &out)
    }

    /// `value` as the row encoding has it. Two values are the same cell when these bytes are equal
    /// (a cell is its column's hash default only then: 0.0 is not -0.0).
    public static func encodedValue(_ value: SQLValue) -> [UInt8] {
        var out: [UInt8] = []
        RecordEncoding.value(value, &out)
        return out
    }

    /// The hash of a row given by its values, for callers that do not encode rows themselves. The
    /// caller leaves out the cells that hold their column's hash default: this does not know them.
    public static func rowHash(table: String, columns: [(name: String, value: SQLValue)]) -> UInt64 {
        var message: [UInt8] = []
        encodeRow(table: table, columns: columns, into: &message)
        return message.withUnsafeBytes { rowHash($0) }
    }

    /// A row's hash taken as its encoding is given, piece by piece: the same hash as `rowHash(_:)`
    /// of the same bytes. The pieces are gathered in a buffer kept for the next row (`reset()`).
    public struct Hasher {
        private var encoding = EncodingBuffer()

        public init() {}

        /// Forgets what was appended, keeping the buffer.
        public mutating func reset() { encoding.removeAll() }

        /// Bytes already in the row encoding: an encoded table name, or a column's encoded name.
        public mutating func append(_ encoded: UnsafeRawBufferPointer) { encoding.put(encoded) }

        /// Appends `value` as `RowDigest.appendValue` does.
        public mutating func appendValue(_ value: SQLValue) { RecordEncoding.value(value, &encoding) }

        /// Appends an INTEGER as `RowDigest.appendInteger` does.
        public mutating func appendInteger(_ value: Int64) { RecordEncoding.integer(value, &encoding) }

        /// Appends a REAL as `RowDigest.appendReal` does.
        public mutating func appendReal(_ value: Double) { RecordEncoding.real(value, &encoding) }

        /// Appends a TEXT given as its UTF-8 bytes, as `RowDigest.appendText` does.
        public mutating func appendText(_ utf8: UnsafeRawBufferPointer) {
            RecordEncoding.bytes(.text, utf8, &encoding)
        }

        /// Appends a BLOB given as its bytes, as `RowDigest.appendBlob` does.
        public mutating func appendBlob(_ bytes: UnsafeRawBufferPointer) {
            RecordEncoding.bytes(.blob, bytes, &encoding)
        }

        /// The row's hash.
        public func finalize() -> UInt64 { RowDigest.rowHash(encoding.bytes) }
    }

    /// SipHash's key: the ASCII bytes of "tidemark digest1", read as two little-endian words.
    static let key: (UInt64, UInt64) = {
        let bytes = Array("tidemark digest1".utf8)
        func word(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << UInt64(8 * $1) } }
        return (word(0), word(8))
    }()

    /// A short form of the whole digest for people to compare: 16 hex digits of the hash of its
    /// encoding.
    public var fingerprint: String {
        HexCoding.encode(bigEndian: bytes.withUnsafeBytes { SipHash24.hash($0, k0: Self.key.0, k1: Self.key.1) })
    }

    /// The digest in the header attribute's encoding, for storing it.
    public var bytes: [UInt8] { encoded() }

    /// Reads a digest stored as `bytes` gave it.
    public init(bytes: [UInt8]) throws {
        var r = PayloadReader(bytes, base: 0)
        do {
            self = try Self.decode(&r)
        } catch let defect as BundleHeader.AttributeDefect {
            throw BundleError.framing(.badHeader(defect.why), offset: r.position)
        }
        guard r.atEnd else { throw BundleError.framing(.badHeader("row digest: bytes left over"), offset: r.position) }
    }

    /// The header attribute's data (bundle.md §3.3): the entry count, then per entry its name,
    /// its row count (varint) and its sum (8 bytes, big-endian).
    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        RecordEncoding.varint(UInt64(tables.count), &out)
        for table in tables {
            RecordEncoding.string(table.name, &out)
            RecordEncoding.varint(table.rows, &out)
            out += RecordEncoding.uint64BigEndian(table.sum)
        }
        return out
    }

    /// Reads the attribute's data; throws `BundleHeader.AttributeDefect` for data that breaks
    /// exchange.md §8.3, and the reader's own errors where it ends early.
    static func decode(_ r: inout PayloadReader) throws -> RowDigest {
        func bad(_ why: String) -> BundleHeader.AttributeDefect { BundleHeader.AttributeDefect(why: why) }
        let count = try r.varint()
        guard count <= UInt64(BundleFormat.maxHeaderEntries) else { throw bad("row digest: too many tables") }
        var tables: [Table] = []
        for _ in 0..<count {
            let name = try r.string()
            guard !name.isEmpty else { throw bad("row digest: empty table name") }
            if let prior = tables.last, !prior.name.utf8.lexicographicallyPrecedes(name.utf8) {
                throw bad("row digest: tables not in ascending order")
            }
            let rows = try r.varint()
            let sum = try r.take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard rows != 0 || sum != 0 else { throw bad("row digest: an entry for an empty table") }
            tables.append(Table(name: name, rows: rows, sum: sum))
        }
        return RowDigest(tables)
    }
}

/// SipHash-2-4 (Aumasson and Bernstein), with a 64-bit result.
enum SipHash24 {
    static func hash(_ message: UnsafeRawBufferPointer, k0: UInt64, k1: UInt64) -> UInt64 {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1
        @inline(__always) func round() {
            v0 &+= v1
            v1 = (v1 << 13 | v1 >> 51) ^ v0
            v0 = v0 << 32 | v0 >> 32
            v2 &+= v3
            v3 = (v3 << 16 | v3 >> 48) ^ v2
            v0 &+= v3
            v3 = (v3 << 21 | v3 >> 43) ^ v0
            v2 &+= v1
            v1 = (v1 << 17 | v1 >> 47) ^ v2
            v2 = v2 << 32 | v2 >> 32
        }
        let count = message.count
        let whole = count & ~7
        var i = 0
        while i < whole {
            let m = UInt64(littleEndian: message.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            v3 ^= m
            round()
            round()
            v0 ^= m
            i += 8
        }
        var last = UInt64(truncatingIfNeeded: count) << 56
        for j in 0..<(count - whole) { last |= UInt64(message[whole + j]) << UInt64(8 * j) }
        v3 ^= last
        round()
        round()
        v0 ^= last
        v2 ^= 0xff
        round()
        round()
        round()
        round()
        return v0 ^ v1 ^ v2 ^ v3
    }
}
