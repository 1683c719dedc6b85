import Foundation

/// A JSON document with ordered object keys and exact number text.
indirect enum JSON {
    case null
    case bool(Bool)
    case integer(Int64)
    /// A number written exactly as given.
    case number(String)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    static func hex(_ b: [UInt8]) -> JSON { .string(Wire.hex(b)) }
    static func optional(_ s: String?) -> JSON { s.map(JSON.string) ?? .null }

    /// The vector mapping of a SQLite value (Protocol/bundle.md §10.2).
    static func value(_ v: Value) -> JSON {
        switch v {
        case .null: return .null
        case .integer(let i): return .integer(i)
        case .real(let d):
            if d.isNaN {
                return .object([("real", .string("nan")), ("bits", .string(String(format: "%016llx", d.bitPattern)))])
            }
            if d.isInfinite { return .object([("real", .string(d < 0 ? "-Infinity" : "Infinity"))]) }
            // A JSON number that reads back as an integer (or loses the sign of zero) is spelled out.
            if d == d.rounded() { return .object([("real", .string("\(d)"))]) }
            return .number("\(d)")
        case .text(let s): return .string(s)
        case .blob(let b): return .object([("base64", .string(Data(b).base64EncodedString()))])
        }
    }

    func rendered(indent: String = "") -> String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .integer(let i): return String(i)
        case .number(let n): return n
        case .string(let s): return Self.quote(s)
        case .array(let items):
            if items.isEmpty { return "[]" }
            let inline = "[" + items.map { $0.rendered() }.joined(separator: ", ") + "]"
            if items.allSatisfy(\.isFlat), inline.count <= 120 { return inline }
            let inner = indent + "  "
            return "[\n" + items.map { inner + $0.rendered(indent: inner) }.joined(separator: ",\n") + "\n" + indent
                + "]"
        case .object(let pairs):
            if pairs.isEmpty { return "{}" }
            if pairs.count <= 2, pairs.allSatisfy({ $0.1.isScalar }) {
                return "{" + pairs.map { Self.quote($0.0) + ": " + $0.1.rendered() }.joined(separator: ", ") + "}"
            }
            let inner = indent + "  "
            return "{\n"
                + pairs.map { inner + Self.quote($0.0) + ": " + $0.1.rendered(indent: inner) }.joined(separator: ",\n")
                + "\n"
                + indent + "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: return false
        default: return true
        }
    }

    /// Scalars, small objects of scalars, and arrays of those print on one line.
    private var isFlat: Bool {
        switch self {
        case .array(let items): return items.allSatisfy { $0.isScalar || $0.isSmallObject }
        case .object: return isSmallObject
        default: return true
        }
    }

    private var isSmallObject: Bool {
        if case .object(let pairs) = self { return pairs.count <= 2 && pairs.allSatisfy { $0.1.isScalar } }
        return false
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
