import Foundation
import TidemarkCore

/// A SQLite value in the vectors' JSON mapping (bundle.md §10.2): null, an integer, a non-integral
/// number (REAL), a string (TEXT), `{"base64": …}` (BLOB), or `{"real": …}` for a REAL that a
/// JSON number cannot carry exactly (integral values, -0.0, infinities, NaN with `"bits"`).
struct JSONValue: Decodable {
    var value: SQLValue

    private enum Keys: String, CodingKey { case base64, real, bits }

    init(from decoder: Decoder) throws {
        if let object = try? decoder.container(keyedBy: Keys.self) {
            if let base64 = try object.decodeIfPresent(String.self, forKey: .base64) {
                guard let data = Data(base64Encoded: base64) else {
                    throw DecodingError.dataCorruptedError(forKey: .base64, in: object, debugDescription: "bad base64")
                }
                value = .blob(Array(data))
                return
            }
            let text = try object.decode(String.self, forKey: .real)
            switch text {
            case "nan":
                let bits = try object.decode(String.self, forKey: .bits)
                guard let pattern = UInt64(bits, radix: 16) else {
                    throw DecodingError.dataCorruptedError(forKey: .bits, in: object, debugDescription: bits)
                }
                value = .real(Double(bitPattern: pattern))
            case "Infinity": value = .real(.infinity)
            case "-Infinity": value = .real(-.infinity)
            default:
                guard let d = Double(text) else {
                    throw DecodingError.dataCorruptedError(forKey: .real, in: object, debugDescription: text)
                }
                value = .real(d)
            }
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            value = .null
        } else if let text = try? single.decode(String.self) {
            value = .text(text)
        } else if let integer = try? single.decode(Int64.self) {
            value = .integer(integer)
        } else {
            value = .real(try single.decode(Double.self))
        }
    }
}
