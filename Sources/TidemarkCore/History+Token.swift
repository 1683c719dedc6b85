import Crypto
import Foundation

extension History {
    /// A point in history: for every replica, how many of its transactions are included.
    ///
    /// Tokens form a version vector with its partial order: `a.covers(b)` when `a` includes every
    /// transaction `b` does. Two tokens may be concurrent (neither covers the other). The text form
    /// (`description`, `init(parsing:)`) is one opaque line, usable with `sync log --since`.
    public struct Token: Hashable, Sendable, Codable, CustomStringConvertible {
        /// The highest sequence number included for each replica; replicas absent are at 0.
        public private(set) var sequences: [Replica.ID: Int64]

        /// The empty token, before any transaction.
        public static let zero = Token(sequences: [:])

        /// Creates a token from per-replica sequence numbers; zero entries are dropped.
        public init(sequences: [Replica.ID: Int64]) {
            self.sequences = sequences.filter { $0.value > 0 }
        }

        /// The highest sequence number of `replica` this token includes (0 if none).
        public subscript(replica: Replica.ID) -> Int64 {
            get { sequences[replica] ?? 0 }
            set { sequences[replica] = newValue > 0 ? newValue : nil }
        }

        /// Whether this token includes every transaction that `other` includes.
        public func covers(_ other: Token) -> Bool {
            other.sequences.allSatisfy { self[$0.key] >= $0.value }
        }

        /// Whether this token includes transaction `sequence` of `replica`.
        public func includes(replica: Replica.ID, sequence: Int64) -> Bool { self[replica] >= sequence }

        /// The greatest token both cover: what two holders certainly share.
        public func meet(_ other: Token) -> Token {
            Token(sequences: Dictionary(uniqueKeysWithValues: sequences.map { ($0.key, min($0.value, other[$0.key])) }))
        }

        /// The least token covering both.
        public func merged(with other: Token) -> Token {
            Token(sequences: sequences.merging(other.sequences, uniquingKeysWith: max))
        }

        // MARK: - Text form

        static let prefix = "tm1."

        /// `tm1.` followed by base64url of: entries sorted by replica id, each 16 id bytes and the
        /// sequence as an unsigned LEB128 varint, then the first 4 bytes of SHA-256 of the entries.
        public var description: String {
            var body = [UInt8]()
            for id in sequences.keys.sorted() {
                body += id.bytes
                Varint.append(UInt64(sequences[id]!), to: &body)
            }
            body += SHA256.hash(data: body).prefix(4)
            return Self.prefix + Base64URL.encode(body)
        }

        /// Parses the text form; throws `TokenError` naming what is wrong.
        public init(parsing text: String) throws {
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard trimmed.hasPrefix(Self.prefix) else { throw TokenError.notAToken(text) }
            guard let bytes = Base64URL.decode(String(trimmed.dropFirst(Self.prefix.count))) else {
                throw TokenError.malformed(text, reason: "not base64url")
            }
            guard bytes.count >= 4 else {
                throw TokenError.malformed(text, reason: "too short for its checksum (token was cut)")
            }
            let body = Array(bytes.dropLast(4))
            guard Array(SHA256.hash(data: body).prefix(4)) == Array(bytes.suffix(4)) else {
                throw TokenError.malformed(text, reason: "checksum mismatch (token was altered or cut)")
            }
            var sequences = [Replica.ID: Int64]()
            var offset = 0
            var previous: Replica.ID?
            while offset < body.count {
                guard offset + Replica.ID.byteCount <= body.count,
                    let id = Replica.ID(bytes: Array(body[offset..<offset + Replica.ID.byteCount]))
                else { throw TokenError.malformed(text, reason: "truncated entry") }
                offset += Replica.ID.byteCount
                guard let (value, used) = Varint.read(body, at: offset), value > 0, value <= UInt64(Int64.max) else {
                    throw TokenError.malformed(text, reason: "bad sequence number")
                }
                offset += used
                if let previous, !(previous < id) { throw TokenError.malformed(text, reason: "entries out of order") }
                previous = id
                sequences[id] = Int64(value)
            }
            self.init(sequences: sequences)
        }

        public init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            try self.init(parsing: try container.decode(String.self))
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }
    }

    /// Why a token could not be read.
    public enum TokenError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The text does not start like a token at all.
        case notAToken(String)
        /// The text starts like a token but is damaged.
        case malformed(String, reason: String)

        public var description: String {
            switch self {
            case .notAToken(let t):
                return "not a history token: \(Self.clip(t)) (tokens start with 'tm1.')"
            case .malformed(let t, let reason):
                return "malformed history token \(Self.clip(t)): \(reason)"
            }
        }

        static func clip(_ s: String) -> String { s.count > 40 ? "'\(s.prefix(37))...'" : "'\(s)'" }
    }
}

/// Unsigned LEB128 varints.
public enum Varint {
    /// Appends `value` as an unsigned LEB128 varint.
    @inlinable
    public static func append(_ value: UInt64, to out: inout some EncodingOutput) {
        var v = value
        while v >= 0x80 {
            out.put(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.put(UInt8(v))
    }

    /// Reads a canonical varint at `offset`: returns the value and the bytes used, or nil when the
    /// varint runs past the end, exceeds 64 bits, or has a redundant trailing zero byte.
    public static func read(_ bytes: [UInt8], at offset: Int) -> (UInt64, Int)? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var i = offset
        while i < bytes.count {
            let b = bytes[i]
            if shift == 63 && b > 1 { return nil }
            result |= UInt64(b & 0x7f) << shift
            i += 1
            if b & 0x80 == 0 {
                if b == 0 && i - offset > 1 { return nil }
                return (result, i - offset)
            }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }
}

/// Base64 with the URL-safe alphabet and no padding (RFC 4648 §5).
public enum Base64URL {
    /// Encodes bytes.
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes; nil on characters outside the alphabet.
    public static func decode(_ text: String) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return nil
        }
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map(Array.init)
    }
}
