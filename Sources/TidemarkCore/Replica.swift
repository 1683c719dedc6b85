import Crypto
import Foundation

/// A member of a sync group: one device's store, named by a person and identified by its key.
public struct Replica: Hashable, Sendable {
    /// The stable identity of a replica: the first 16 bytes of SHA-256 over its Ed25519 public key,
    /// so no replica can claim another's identity without its private key.
    public struct ID: Hashable, Comparable, Sendable, CustomStringConvertible {
        /// The 16 identity bytes as two big-endian halves, held inline: an identity goes with
        /// every clock of every row's metadata, and inline it is copied and dropped without a
        /// reference count or an allocation.
        private let high: UInt64
        private let low: UInt64

        /// The 16 identity bytes.
        public var bytes: [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(Self.byteCount)
            append(to: &out)
            return out
        }

        /// The number of bytes in an identity.
        public static let byteCount = 16

        /// Wraps 16 identity bytes; returns nil for any other length. (An array, not any
        /// collection: a generic initializer runs unspecialized from another module, element by
        /// element through witness tables, at a hundred times the cost.)
        public init?(bytes: [UInt8]) {
            guard bytes.count == Self.byteCount else { return nil }
            (high, low) = Self.halves(of: bytes, at: 0)
        }

        /// Derives the identity of the replica holding `publicKey` (32 raw Ed25519 bytes).
        public init(publicKey: [UInt8]) {
            self.init(bytes: Array(SHA256.hash(data: publicKey).prefix(Self.byteCount)))!
        }

        /// Parses the 32-character lowercase hex form printed by `description`.
        public init?(hex: String) {
            guard hex.utf8.count == Self.byteCount * 2, let bytes = HexCoding.decode(hex) else { return nil }
            self.init(bytes: bytes)
        }

        /// Appends the 16 identity bytes to `out`.
        public func append(to out: inout [UInt8]) {
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: high >> UInt64(shift)))
            }
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: low >> UInt64(shift)))
            }
        }

        /// Whether the 16 bytes of `buffer` from `offset` are this identity (false when fewer are there).
        public func isStored(in buffer: [UInt8], at offset: Int) -> Bool {
            guard offset >= 0, buffer.count - offset >= Self.byteCount else { return false }
            return Self.halves(of: buffer, at: offset) == (high, low)
        }

        /// The 16 bytes of `buffer` from `offset` as two big-endian halves.
        private static func halves(of buffer: [UInt8], at offset: Int) -> (UInt64, UInt64) {
            var halves: (UInt64, UInt64) = (0, 0)
            for i in 0..<8 {
                halves.0 = halves.0 << 8 | UInt64(buffer[offset + i])
                halves.1 = halves.1 << 8 | UInt64(buffer[offset + 8 + i])
            }
            return halves
        }

        /// 32 lowercase hex digits.
        public var description: String { HexCoding.encode(bytes) }

        /// The first 8 hex digits, for compact human output.
        public var short: String { String(description.prefix(8)) }

        /// The order of the bytes, first byte first.
        public static func < (lhs: ID, rhs: ID) -> Bool { (lhs.high, lhs.low) < (rhs.high, rhs.low) }
    }

    /// The human name given at `sync init`.
    public var name: String
    /// The identity derived from the public key.
    public var id: ID

    /// Creates a replica description.
    public init(name: String, id: ID) {
        self.name = name
        self.id = id
    }
}

/// Lowercase hexadecimal encoding.
public enum HexCoding {
    /// Encodes bytes as lowercase hex.
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Encodes a 64-bit value as 16 lowercase hex digits, most significant first.
    public static func encode(bigEndian value: UInt64) -> String { encode(RecordEncoding.uint64BigEndian(value)) }

    /// Decodes hex (either case); nil on odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
