import GRDB
import TidemarkCore

/// Hashes one tracked table's rows for its row digest (Protocol/exchange.md §8.1), straight from a
/// statement's columns: the encoding is built in one reused buffer, with no `SQLValue`s. A cell
/// that is NULL or holds its column's hash default (`HashDefaults`) is left out.
///
/// A REAL-affinity column's integral value is kept as an integer on disk and read back as a real;
/// the hash takes an integer in such a column as that real.
final class RowHasher {
    /// Column indexes in ascending bytewise order of name: the order the encoding uses.
    private let order: [Int]
    /// The encoded table name, then each column's encoded name, by column index.
    private let prefix: [UInt8]
    private let names: [[UInt8]]
    /// Each column's affinity, and whether it is REAL.
    private let affinities: [ColumnAffinity]
    private let real: [Bool]
    /// Each column's encoded name and hash default, for a column that has one: a cell that encodes
    /// to it is left out.
    private let defaults: [[UInt8]?]
    /// Whether the table has triggers other than Tidemark's, which may change a row as it is written.
    let hasOtherTriggers: Bool
    private var buffer: [UInt8] = []

    init(table: TrackedTable, _ db: Database) throws {
        let columns = try HashDefaults.of(table.columns, in: table.name, db)
        affinities = columns.affinities
        real = affinities.map { $0 == .real }
        // A trigger names its table as written (`ON ITEMS`), and a TEMP trigger may sit on it too.
        let others = ["sqlite_schema", "sqlite_temp_schema"].map { schema in
            """
            SELECT 1 FROM \(schema) WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE
            AND name NOT LIKE '\(Bookkeeping.prefix.replacingOccurrences(of: "_", with: "\\_"))%' ESCAPE '\\'
            """
        }
        hasOtherTriggers = try Bool.fetchOne(
            db, sql: "SELECT EXISTS (\(others.joined(separator: " UNION ALL ")))", arguments: [table.name, table.name])!
        order = table.columns.indices.sorted {
            table.columns[$0].utf8.lexicographicallyPrecedes(table.columns[$1].utf8)
        }
        var prefix: [UInt8] = []
        RowDigest.encodeRow(table: table.name, columns: [], into: &prefix)
        self.prefix = prefix
        names = table.columns.map { name in
            var out: [UInt8] = []
            Varint.append(UInt64(name.utf8.count), to: &out)
            out += name.utf8
            return out
        }
        defaults = zip(names, columns.defaults).map { name, value in
            value.map { name + RowDigest.encodedValue($0) }
        }
        buffer.reserveCapacity(256)
    }

    /// The hash of the current row of `statement`, whose column `start + i` holds the table's
    /// column `i`, or of a row caught as SQLite writes it (`PreUpdateRow`).
    func hash(_ statement: some EncodedRow, start: Int32 = 0) -> Int64 {
        encoding { buffer in
            for i in order {
                let cell = buffer.count
                buffer += names[i]
                // A NULL cell is left out, name and all.
                guard statement.appendEncodedValue(start + Int32(i), asReal: real[i], to: &buffer) else {
                    buffer.removeSubrange(cell...)
                    continue
                }
                leaveOutDefault(i, from: cell, of: &buffer)
            }
            return true
        }!
    }

    /// The hash of the row a write of `values` (by column index, every column given) leaves, known
    /// without reading it back when SQLite stores each value exactly as given (its column's
    /// affinity keeps it) and no other trigger can change the row. Nil when it must be read.
    func hash(writing values: [SQLValue?]) -> Int64? {
        guard !hasOtherTriggers else { return nil }
        return encoding { buffer in
            for i in order {
                guard let value = values[i], affinities[i].keeps(value) else { return false }
                let start = buffer.count
                switch value {
                case .null: continue
                case .integer(let v) where real[i]:
                    buffer += names[i]
                    RowDigest.appendValue(.real(Double(v)), to: &buffer)
                default:
                    buffer += names[i]
                    RowDigest.appendValue(value, to: &buffer)
                }
                leaveOutDefault(i, from: start, of: &buffer)
            }
            return true
        }
    }

    /// Removes column `i`'s cell, appended to `buffer` from `start`, when it is the column's hash default.
    private func leaveOutDefault(_ i: Int, from start: Int, of buffer: inout [UInt8]) {
        guard let cell = defaults[i], buffer.count - start == cell.count, buffer[start...].elementsEqual(cell) else {
            return
        }
        buffer.removeSubrange(start...)
    }

    /// The hash of the encoding that `body` appends after the table name, in the reused buffer
    /// (taken out of the object while it is filled); nil when `body` gives up.
    private func encoding(_ body: (inout [UInt8]) -> Bool) -> Int64? {
        var out: [UInt8] = []
        swap(&out, &buffer)
        defer { swap(&out, &buffer) }
        out.removeAll(keepingCapacity: true)
        out += prefix
        guard body(&out) else { return nil }
        return Int64(bitPattern: out.withUnsafeBytes { RowDigest.rowHash($0) })
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension RowHasher: Sendable {}

/// A row whose columns the row hash can encode where they lie: a statement's current row, or one
/// SQLite is about to write.
protocol EncodedRow {
    /// Appends column `index`'s value as the row hash encodes it, an INTEGER as a REAL when
    /// `asReal`; returns false, having appended nothing, when it is NULL.
    func appendEncodedValue(_ index: Int32, asReal: Bool, to out: inout [UInt8]) -> Bool
}

extension RawStatement: EncodedRow {}
extension PreUpdateRow.Values: EncodedRow {}
