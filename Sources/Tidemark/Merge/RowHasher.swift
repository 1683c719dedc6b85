import GRDB
import TidemarkCore

/// Hashes one tracked table's rows for its row digest (Protocol/exchange.md §8.1), straight from a
/// statement's columns, with no `SQLValue`s, in a buffer kept from row to row. A cell that is NULL
/// or holds its column's hash default (`HashDefaults`) is left out.
///
/// A REAL-affinity column's integral value is kept as an integer on disk and read back as a real;
/// the hash takes an integer in such a column as that real.
final class RowHasher {
    /// Column indexes in ascending bytewise order of name: the order the encoding uses.
    private let order: [Int]
    /// The encoded table name, then each column's encoded name, one after another; `names[i]` is
    /// where column `i`'s lies.
    private let encodedNames: [UInt8]
    private let prefix: Range<Int>
    private let names: [Range<Int>]
    /// Each column's affinity, and whether it is REAL.
    private let affinities: [ColumnAffinity]
    private let real: [Bool]
    /// Each column's hash default, encoded as a value, for a column that has one: a cell that
    /// encodes to it is left out.
    private let defaults: [[UInt8]?]
    /// Whether the table has triggers other than Tidemark's, which may change a row as it is written.
    let hasOtherTriggers: Bool
    /// The hasher each row is taken with, kept with its buffer for the next.
    private var kept = RowDigest.Hasher()

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
        var encoded: [UInt8] = []
        RowDigest.encodeRow(table: table.name, columns: [], into: &encoded)
        prefix = 0..<encoded.count
        names = table.columns.map { name in
            let start = encoded.count
            Varint.append(UInt64(name.utf8.count), to: &encoded)
            encoded += name.utf8
            return start..<encoded.count
        }
        encodedNames = encoded
        defaults = columns.defaults.map { $0.map(RowDigest.encodedValue) }
    }

    /// The hash of the current row of `statement`, whose column `start + i` holds the table's
    /// column `i`, or of a row caught as SQLite writes it (`PreUpdateRow`).
    func hash(_ statement: some EncodedRow, start: Int32 = 0) -> Int64 {
        encoding { hasher, encoded in
            // Moved, not copied: a copy would write to a buffer of its own.
            var cells = NamedCells(hasher: RowDigest.Hasher())
            swap(&cells.hasher, &hasher)
            defer { swap(&cells.hasher, &hasher) }
            // A cell compared with its column's hash default, reused from column to column.
            var value: [UInt8] = []
            for i in order {
                cells.name = UnsafeRawBufferPointer(rebasing: encoded[names[i]])
                guard let cell = defaults[i] else {
                    // A NULL cell is left out, name and all: `cells` is given neither.
                    statement.appendEncodedValue(start + Int32(i), asReal: real[i], to: &cells)
                    continue
                }
                value.removeAll(keepingCapacity: true)
                guard statement.appendEncodedValue(start + Int32(i), asReal: real[i], to: &value), value != cell
                else { continue }
                cells.hasher.append(cells.name)
                value.withUnsafeBytes { cells.hasher.append($0) }
            }
            return true
        }!
    }

    /// The hash of the row a captured insert left, from the history row `captured` holds, where the
    /// table's column `i` lies at statement column `columns[i]`: the capture trigger recorded each
    /// value as SQLite stored it. Nil when another trigger may have changed the row since.
    func hash(captured: RawStatement, columns: [Int32]) -> Int64? {
        guard !hasOtherTriggers else { return nil }
        return hash(MappedColumns(statement: captured, columns: columns))
    }

    /// The hash of the row a write of `values` (by column index, every column given) leaves, known
    /// without reading it back when SQLite stores each value exactly as given (its column's
    /// affinity keeps it) and no other trigger can change the row. Nil when it must be read.
    func hash(writing values: [SQLValue?]) -> Int64? {
        guard !hasOtherTriggers else { return nil }
        return encoding { hasher, encoded in
            // A cell compared with its column's hash default, reused from column to column.
            var encodedValue: [UInt8] = []
            for i in order {
                guard var value = values[i], affinities[i].keeps(value) else { return false }
                switch value {
                case .null: continue
                case .integer(let v) where real[i]: value = .real(Double(v))
                default: break
                }
                if let cell = defaults[i] {
                    encodedValue.removeAll(keepingCapacity: true)
                    RowDigest.appendValue(value, to: &encodedValue)
                    if encodedValue == cell { continue }
                }
                hasher.append(UnsafeRawBufferPointer(rebasing: encoded[names[i]]))
                hasher.appendValue(value)
            }
            return true
        }
    }

    /// The hash of the row encoding that `body` gives after the table name, taken with the kept
    /// hasher (out of the object while `body` runs); `encoded` holds the encoded names. Nil when
    /// `body` gives up.
    private func encoding(_ body: (inout RowDigest.Hasher, UnsafeRawBufferPointer) -> Bool) -> Int64? {
        var hasher = RowDigest.Hasher()
        swap(&hasher, &kept)
        defer { swap(&hasher, &kept) }
        hasher.reset()
        return encodedNames.withUnsafeBytes { encoded in
            hasher.append(UnsafeRawBufferPointer(rebasing: encoded[prefix]))
            guard body(&hasher, encoded) else { return nil }
            return Int64(bitPattern: hasher.finalize())
        }
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
    @discardableResult
    func appendEncodedValue(_ index: Int32, asReal: Bool, to out: inout some CellOutput) -> Bool
}

extension RawStatement: EncodedRow {}

/// A statement's current row whose column `i` lies at statement column `columns[i]`.
private struct MappedColumns: EncodedRow {
    let statement: RawStatement
    let columns: [Int32]

    func appendEncodedValue(_ index: Int32, asReal: Bool, to out: inout some CellOutput) -> Bool {
        statement.appendEncodedValue(columns[Int(index)], asReal: asReal, to: &out)
    }
}
extension PreUpdateRow.Values: EncodedRow {}

/// Where an `EncodedRow` puts a cell's value: the row hash as it is taken, or bytes.
protocol CellOutput {
    mutating func appendInteger(_ value: Int64)
    mutating func appendReal(_ value: Double)
    mutating func appendText(_ utf8: UnsafeRawBufferPointer)
    mutating func appendBlob(_ bytes: UnsafeRawBufferPointer)
}

extension Array: CellOutput where Element == UInt8 {
    mutating func appendInteger(_ value: Int64) { RowDigest.appendInteger(value, to: &self) }
    mutating func appendReal(_ value: Double) { RowDigest.appendReal(value, to: &self) }
    mutating func appendText(_ utf8: UnsafeRawBufferPointer) { RowDigest.appendText(utf8, to: &self) }
    mutating func appendBlob(_ bytes: UnsafeRawBufferPointer) { RowDigest.appendBlob(bytes, to: &self) }
}

/// The row hash, given a cell's encoded name just before its value: a NULL cell, which gives no
/// value, adds neither.
private struct NamedCells: CellOutput {
    var hasher: RowDigest.Hasher
    var name = UnsafeRawBufferPointer(start: nil, count: 0)

    mutating func appendInteger(_ value: Int64) { named { $0.appendInteger(value) } }
    mutating func appendReal(_ value: Double) { named { $0.appendReal(value) } }
    mutating func appendText(_ utf8: UnsafeRawBufferPointer) { named { $0.appendText(utf8) } }
    mutating func appendBlob(_ bytes: UnsafeRawBufferPointer) { named { $0.appendBlob(bytes) } }

    /// Appends the name, then what `value` appends.
    private mutating func named(_ value: (inout RowDigest.Hasher) -> Void) {
        hasher.append(name)
        value(&hasher)
    }
}
