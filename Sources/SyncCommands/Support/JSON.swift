import Tidemark
import TidemarkCore

/// A JSON document as the `--json` outputs print it, built from typed values and written by one
/// renderer.
///
/// Not `Encodable` through `JSONEncoder`: that encoder writes the real 1.0 as `1`, so a value would
/// change storage class on its way through the output, and it orders an object's members by its own
/// rule, where these documents keep the table's column order and the documented order. Column values
/// are written as `SQLValue.jsonFragment` says: the forms of Protocol/bundle.md §10.2, except that an
/// integral REAL below 10^15 is a JSON number with a fraction (`3.0`) instead of `{"real": "3.0"}`.
indirect enum JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case null
    case bool(Bool)
    case integer(Int64)
    case string(String)
    /// A column value.
    case value(SQLValue)
    case array([JSON])
    /// An array written one item per line, as `log --json` and `conflicts --json` print it, so that
    /// line tools can work through it.
    case lines([JSON])
    /// Members in the order given.
    case object([(String, JSON)])
    /// JSON the library wrote already (a conflict's key and row, as the store keeps them).
    case written(String)

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int64) { self = .integer(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSON)...) { self = .object(elements) }

    /// A string, or null.
    static func string(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }
    /// A count.
    static func integer(_ value: Int) -> JSON { .integer(Int64(value)) }
    /// A number, or null.
    static func integer<N: BinaryInteger>(_ value: N?) -> JSON { value.map { .integer(Int64($0)) } ?? .null }
    /// A moment in ISO 8601 with milliseconds, or null.
    static func date(_ value: HLCTimestamp?) -> JSON { value.map { .string($0.iso8601) } ?? .null }
    /// A list of strings.
    static func strings(_ values: [String]) -> JSON { .array(values.map(JSON.string)) }
    /// Named column values, in the order given.
    static func columns(_ columns: [History.Column]) -> JSON { .object(columns.map { ($0.name, .value($0.value)) }) }

    /// The document on one line, without spaces.
    var text: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .integer(let value): return String(value)
        case .string(let value): return JSONText.quote(value)
        case .value(let value): return value.jsonFragment
        case .written(let text): return text
        case .array(let items): return "[" + items.map(\.text).joined(separator: ",") + "]"
        case .lines(let items): return items.isEmpty ? "[]" : "[\n" + items.map(\.text).joined(separator: ",\n") + "\n]"
        case .object(let members):
            return "{" + members.map { JSONText.quote($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
        }
    }

}
