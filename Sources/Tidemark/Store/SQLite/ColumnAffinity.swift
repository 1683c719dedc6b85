import GRDB
import TidemarkCore

/// A column's type affinity, by SQLite's rules for its declared type (datatype3.html §3.1). A
/// `STRICT` table's `ANY` column has NUMERIC affinity by these rules but keeps every value as
/// written; callers that care say so.
enum ColumnAffinity: Equatable {
    case integer, text, blob, real, numeric

    init(declaredType: String) {
        let type = declaredType.uppercased()
        if type.contains("INT") {
            self = .integer
        } else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") {
            self = .text
        } else if type.contains("BLOB") || type.isEmpty {
            self = .blob
        } else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") {
            self = .real
        } else {
            self = .numeric
        }
    }

    /// Whether a column of this affinity stores `value` as given, so that reading it back gives
    /// the same value (for REAL affinity, an integer comes back as the equal real). Errs towards
    /// false: text that may look like a number to SQLite, in a numeric column, is not vouched for.
    func keeps(_ value: SQLValue) -> Bool {
        switch (value, self) {
        case (.real(let d), _) where d.isNaN: return false  // stored as NULL
        case (.null, _), (.blob, _), (_, .blob): return true
        case (.integer, .text), (.real, .text): return false
        case (.integer, _): return true
        case (.real(let d), .real): return !(d == 0 && d.sign == .minus)  // -0.0 is kept as the integer 0
        case (.real(let d), _): return d.rounded() != d  // an integral real becomes an integer
        case (.text, .text): return true
        case (.text(let s), _):
            // SQLite turns text into a number when it reads as one; such text starts, after spaces,
            // with a digit, a sign or a point.
            guard let first = s.utf8.first(where: { !Self.spaces.contains($0) }) else { return true }
            return !Self.numberStarts.contains(first)
        }
    }

    private static let spaces: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D]
    private static let numberStarts = Set(Array("0123456789+-.".utf8))

    /// The affinity of each of `columns` of `table`, in the order given (BLOB for a name the table
    /// does not have).
    static func of(_ columns: [String], in table: String, _ db: Database) throws -> [ColumnAffinity] {
        let declared = try Dictionary(
            Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_xinfo(?)", arguments: [table]).map {
                ($0[0] as String, $0[1] as String)
            },
            uniquingKeysWith: { first, _ in first })
        return columns.map { ColumnAffinity(declaredType: declared[$0] ?? "") }
    }
}
