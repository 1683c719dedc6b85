import Foundation

/// One SQLite value, with its storage class kept exactly.
///
/// Tidemark never converts between storage classes: an INTEGER stays a 64-bit integer, a REAL keeps
/// every bit (including -0.0), TEXT is UTF-8 and a BLOB is raw bytes.
public enum SQLValue: Hashable, Sendable {
    /// SQL NULL.
    case null
    /// A 64-bit signed INTEGER.
    case integer(Int64)
    /// An IEEE-754 double REAL.
    case real(Double)
    /// UTF-8 TEXT.
    case text(String)
    /// A BLOB of raw bytes.
    case blob([UInt8])

    /// Values are equal when storage class and bits are equal (`-0.0` differs from `0.0`, and a
    /// NaN equals a NaN with the same bits), so merges and comparisons are deterministic.
    public static func == (lhs: SQLValue, rhs: SQLValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.integer(let a), .integer(let b)): return a == b
        case (.real(let a), .real(let b)): return a.bitPattern == b.bitPattern
        case (.text(let a), .text(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.blob(let a), .blob(let b)): return a == b
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let v):
            hasher.combine(1)
            hasher.combine(v)
        case .real(let v):
            hasher.combine(2)
            hasher.combine(v.bitPattern)
        case .text(let v):
            hasher.combine(3)
            hasher.combine(Array(v.utf8))
        case .blob(let v):
            hasher.combine(4)
            hasher.combine(v)
        }
    }
}

extension SQLValue: CustomStringConvertible {
    /// A compact SQL-literal rendering used by `sync log`: `NULL`, `42`, `1.5`, `'text'`, `x'00ff'`.
    /// Characters that would break a line or not show (controls, U+0085, U+2028, U+2029) are
    /// written as SQLite's `char(…)` beside the quoted rest, so a value stays on its line and reads
    /// back as the same text: `'a' || char(10) || 'b'`, `'x' || char(0)`.
    public var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let v): return String(v)
        case .real(let v): return SQLValue.render(real: v)
        case .text(let v): return SQLValue.render(text: v)
        case .blob(let v): return "x'" + v.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }

    /// Text as `description` writes it: runs of characters quoted, and runs of characters that
    /// would break a line or not show as one `char(…)` each, joined with `||`.
    static func render(text: String) -> String {
        var parts: [String] = []
        var quoted = ""
        var codes: [UInt32] = []
        /// Ends the run going on (only one of the two is).
        func endRun() {
            if !quoted.isEmpty { parts.append("'\(quoted)'") }
            if !codes.isEmpty { parts.append("char(\(codes.map(String.init).joined(separator: ", ")))") }
            (quoted, codes) = ("", [])
        }
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x85 || scalar == "\u{2028}"
                || scalar == "\u{2029}"
            {
                if !quoted.isEmpty { endRun() }
                codes.append(scalar.value)
            } else {
                if !codes.isEmpty { endRun() }
                quoted += scalar == "'" ? "''" : String(scalar)
            }
        }
        endRun()
        return parts.isEmpty ? "''" : parts.joined(separator: " || ")
    }

    /// A REAL as SQL that reads back as the same value: an infinity as `9e999` or `-9e999`, which
    /// SQLite's parser rounds to it (its own `quote()` writes `Inf`, which reads as a name).
    /// SQLite stores no NaN; one a bundle carried prints as `NaN`.
    static func render(real v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-9e999" : "9e999" }
        if v == v.rounded(), abs(v) < 1e15 {
            return (v.sign == .minus && v == 0) ? "-0.0" : String(format: "%.1f", v)
        }
        return "\(v)"
    }
}

// MARK: - JSON

extension SQLValue {
    /// The JSON form used by `log --json`, `inspect --json` and the protocol's test vectors:
    /// NULL→null, INTEGER→number (exact), REAL→number, TEXT→string, BLOB→`{"base64": "…"}`.
    ///
    /// A REAL whose JSON number would read back as an integer is written `{"real": "…"}` so that no
    /// value changes storage class on the way through JSON; an infinity as `{"real": "Infinity"}` or
    /// `{"real": "-Infinity"}` and NaN as `{"real": "nan", "bits": "…"}` with its 16 hex digits, the
    /// spellings of Protocol/bundle.md §10.2.
    public var jsonFragment: String {
        switch self {
        case .null: return "null"
        case .integer(let v): return String(v)
        case .real(let v):
            if v.isInfinite { return v < 0 ? #"{"real":"-Infinity"}"# : #"{"real":"Infinity"}"# }
            if v.isNaN {
                let bits = String(v.bitPattern, radix: 16)
                return #"{"real":"nan","bits":""# + String(repeating: "0", count: 16 - bits.count) + bits + #""}"#
            }
            if v == v.rounded(), abs(v) < 1e15 { return SQLValue.render(real: v) }
            return "\(v)"
        case .text(let v): return JSONText.quote(v)
        case .blob(let v): return "{\"base64\":\"\(Data(v).base64EncodedString())\"}"
        }
    }
}

/// Minimal, exact JSON writing for the values and documents Tidemark prints.
public enum JSONText {
    /// Quotes and escapes a string as a JSON string literal.
    public static func quote(_ s: String) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Renders an ordered list of `(name, value)` pairs as a JSON object.
    public static func object(_ pairs: [(String, SQLValue)]) -> String {
        "{" + pairs.map { quote($0.0) + ":" + $0.1.jsonFragment }.joined(separator: ",") + "}"
    }
}
