import Foundation
import GRDB
import TidemarkCore

/// A replica id is stored as its 16 bytes (a BLOB). Reading anything else fails with GRDB's
/// decoding error, which names the column, instead of a crash.
extension Replica.ID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { Data(bytes).databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> Replica.ID? {
        Data.fromDatabaseValue(dbValue).flatMap { Replica.ID(bytes: [UInt8]($0)) }
    }
}
