import Foundation
import GRDB
import TidemarkCore

extension SQLValue: DatabaseValueConvertible {
    /// The GRDB value with the same storage class.
    public var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case .integer(let v): return v.databaseValue
        case .real(let v): return v.databaseValue
        case .text(let v): return v.databaseValue
        case .blob(let v): return Data(v).databaseValue
        }
    }

    /// Converts a GRDB value, keeping its storage class.
    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> SQLValue? { SQLValue(dbValue) }

    /// Converts a GRDB value, keeping its storage class.
    public init(_ dbValue: DatabaseValue) {
        switch dbValue.storage {
        case .null: self = .null
        case .int64(let v): self = .integer(v)
        case .double(let v): self = .real(v)
        case .string(let v): self = .text(v)
        case .blob(let v): self = .blob([UInt8](v))
        }
    }
}
