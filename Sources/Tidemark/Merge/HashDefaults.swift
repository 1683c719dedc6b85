import GRDB
import TidemarkCore

/// Each column's **hash default** (Protocol/exchange.md §8.1): the value of its declared default
/// when that default is a literal that the column's affinity stores as it is. A cell that holds
/// its column's hash default is left out of the row hash, as a NULL is, so a column added with a
/// default changes no row's hash and costs no count of the table.
enum HashDefaults {
    /// The affinity and the hash default (nil: none) of each of `columns` of `table`, in the order
    /// given; a name the table does not have gets BLOB affinity and no default.
    static func of(_ columns: [String], in table: String, _ db: Database) throws -> (
        affinities: [ColumnAffinity], defaults: [SQLValue?]
    ) {
        let declared = try declarations(of: table, db)
        let affinities = columns.map { ColumnAffinity(declaredType: declared[$0]?.type ?? "") }
        let defaults = try zip(columns, affinities).map { name, affinity in
            try declared[name]?.default.flatMap { try value(of: $0, affinity: affinity, db) }
        }
        return (affinities, defaults)
    }

    /// Whether adding `columns`, now columns of `table`, changed the hash of the rows already
    /// there: each such row holds every added column's default, and its hash leaves that cell out
    /// only when the default is NULL or the column's hash default.
    static func changeRowHashes(adding columns: [String], to table: String, _ db: Database) throws -> Bool {
        let declared = try declarations(of: table, db)
        return try columns.contains { name in
            guard let column = declared[name], let text = column.default, text.uppercased() != "NULL" else {
                return false
            }
            return try value(of: text, affinity: ColumnAffinity(declaredType: column.type), db) == nil
        }
    }

    /// Each column's declared type and default, as `pragma_table_xinfo` gives them.
    private static func declarations(of table: String, _ db: Database) throws -> [String: (
        type: String, default: String?
    )] {
        var declared: [String: (type: String, default: String?)] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT name, type, dflt_value FROM pragma_table_xinfo(?)", arguments: [table])
        where declared[row[0]] == nil {
            declared[row[0]] = (row[1], row[2])
        }
        return declared
    }

    /// The hash default of a column of `affinity` declared `DEFAULT text`, or nil: the literal's
    /// value when every row holds it as it is, the rows that predate the column included (SQLite
    /// gives those an integral real in a column of BLOB affinity as an integer).
    private static func value(of text: String, affinity: ColumnAffinity, _ db: Database) throws -> SQLValue? {
        guard RowDigest.isLiteralDefault(text),
            let value = (try? DatabaseValue.fetchOne(db, sql: "SELECT \(text)")).flatMap({ $0 }).map(SQLValue.init),
            value != .null, affinity.keeps(value)
        else { return nil }
        switch value {
        case .real(let d) where d.isInfinite: return nil
        case .real(let d) where affinity == .blob && d.rounded() == d: return nil
        case .integer(let v) where affinity == .real: return .real(Double(v))
        default: return value
        }
    }
}
