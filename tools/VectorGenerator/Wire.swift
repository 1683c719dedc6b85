import Crypto
import Foundation

/// The byte-level encodings of Protocol/bundle.md, written from the specification rather than from
/// the codec, so that the vectors cross-check TidemarkCore instead of echoing it.
///
/// Nothing here sorts or validates: callers give fields in wire order, which is what lets the
/// defect vectors break any rule on purpose.
enum Wire {
    /// §2.2: unsigned LEB128, minimal form.
    static func varint(_ value: UInt64) -> [UInt8] {
        var v = value
        var out: [UInt8] = []
        while v >= 0x80 {
            out.append(UInt8(v & 0x7f) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
        return out
    }

    /// §2.2: ZigZag for signed integers.
    static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
    static func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * UInt32($0))) } }
    static func be64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) } }

    /// §4.1: a length-prefixed byte string (names, TEXT and BLOB payloads).
    static func bytes(_ b: [UInt8]) -> [UInt8] { varint(UInt64(b.count)) + b }
    static func name(_ s: String) -> [UInt8] { bytes(Array(s.utf8)) }

    /// §4.2: presence byte, then the name.
    static func optionalName(_ s: String?) -> [UInt8] {
        guard let s else { return [0] }
        return [1] + name(s)
    }

    /// §4.1: a tagged value.
    static func value(_ v: Value) -> [UInt8] {
        switch v {
        case .null: return [0]
        case .integer(let i): return [1] + varint(zigzag(i))
        case .real(let d): return [2] + be64(d.bitPattern)
        case .text(let s): return [3] + name(s)
        case .blob(let b): return [4] + bytes(b)
        }
    }

    /// §2.3: a token, entries in the order given.
    static func token(_ t: Token) -> [UInt8] {
        var out = varint(UInt64(t.entries.count))
        for e in t.entries { out += e.id + varint(UInt64(bitPattern: e.sequence)) }
        return out
    }

    /// §3.2: one frame.
    static func frame(type: UInt8, flags: UInt8, body: [UInt8]) -> [UInt8] {
        [type, flags] + be32(UInt32(body.count)) + body
    }

    static func sha256(_ b: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: b)) }

    /// §5.1 domain-separation prefixes.
    static let bundlePrefix = Array("tidemark-bundle-v1".utf8) + [0]
    static let chainPrefix = Array("tidemark-chain-v1".utf8) + [0]

    /// §5.2: the chain hash before an origin's first transaction.
    static func genesis(_ origin: [UInt8]) -> [UInt8] { sha256(chainPrefix + origin) }

    /// §5.2: the message an origin signs to attest its chain head.
    static func attestationMessage(origin: [UInt8], sequence: Int64, head: [UInt8]) -> [UInt8] {
        chainPrefix + origin + be64(UInt64(bitPattern: sequence)) + head
    }

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
}

extension Array where Element == UInt8 {
    /// The offset of the only occurrence of `pattern`; stops the generator if there is not exactly one,
    /// so a mutation never lands somewhere unintended.
    func uniqueOffset(of pattern: [UInt8], _ what: String = "") -> Int {
        var found: [Int] = []
        if pattern.count <= count {
            for i in 0...(count - pattern.count)
            where self[i] == pattern[0] && Array(self[i..<i + pattern.count]) == pattern {
                found.append(i)
            }
        }
        guard found.count == 1 else { fatalError("pattern \(Wire.hex(pattern)) \(what) occurs \(found.count) times") }
        return found[0]
    }

    /// Replaces the only occurrence of `pattern` with `replacement`.
    mutating func replaceUnique(_ pattern: [UInt8], with replacement: [UInt8], _ what: String = "") {
        let at = uniqueOffset(of: pattern, what)
        replaceSubrange(at..<at + pattern.count, with: replacement)
    }
}
