/// Reads canonical values and names from a byte buffer (§4), rejecting anything non-canonical.
/// Used for the header payload and, through `RecordStream`, for transaction records.
struct PayloadReader {
    let bytes: [UInt8]
    var position = 0
    /// The file offset of `bytes[0]`, so errors name a byte of the file.
    let base: Int

    init(_ bytes: [UInt8], base: Int = 0) {
        self.bytes = bytes
        self.base = base
    }

    var atEnd: Bool { position == bytes.count }

    mutating func byte() throws -> UInt8 {
        guard position < bytes.count else {
            throw BundleError.framing(.badHeader("ends early"), offset: base + position)
        }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func take(_ n: Int) throws -> [UInt8] {
        guard n <= bytes.count - position else {
            throw BundleError.framing(.badHeader("ends early"), offset: base + position)
        }
        defer { position += n }
        return Array(bytes[position..<position + n])
    }

    mutating func varint() throws -> UInt64 {
        guard let (v, used) = Varint.read(bytes, at: position) else {
            // A varint the payload cuts short is a payload that ends early (R13), not a bad varint.
            if bytes[position...].allSatisfy({ $0 & 0x80 != 0 }) {
                throw BundleError.framing(.badHeader("ends early"), offset: base + position)
            }
            throw BundleError.framing(.badHeader("bad varint", rule: .badVarint), offset: base + position)
        }
        position += used
        return v
    }

    mutating func string() throws -> String {
        let n = try varint()
        guard n <= UInt64(BundleFormat.maxNameLength) else {
            throw BundleError.framing(.badHeader("name too long", rule: .limitExceeded), offset: base + position)
        }
        let raw = try take(Int(n))
        guard let s = String(validating: raw, as: UTF8.self) else {
            throw BundleError.framing(.badHeader("invalid UTF-8", rule: .invalidUTF8), offset: base + position)
        }
        return s
    }

    mutating func token() throws -> History.Token {
        let count = try varint()
        guard count <= UInt64(BundleFormat.maxHeaderEntries) else {
            throw BundleError.framing(.badHeader("token too long", rule: .limitExceeded), offset: base + position)
        }
        var sequences: [Replica.ID: Int64] = [:]
        var previous: Replica.ID?
        for _ in 0..<count {
            let id = Replica.ID(bytes: try take(16))!
            let seq = try varint()
            guard seq > 0, seq <= UInt64(Int64.max) else {
                throw BundleError.framing(.badHeader("bad token entry", rule: .badToken), offset: base + position)
            }
            if let previous, !(previous < id) {
                throw BundleError.framing(
                    .badHeader("token entries out of order", rule: .badToken), offset: base + position)
            }
            previous = id
            sequences[id] = Int64(seq)
        }
        return History.Token(sequences: sequences)
    }
}
