/// Why `BundleEncoder` refused to write a record: the bundle it would write is one that every
/// reader must reject, so the encoder stops instead. After it throws, the encoder and whatever it
/// wrote to its sink so far are unusable; the caller discards them.
public enum BundleWriteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The change or row state of row `key` of `table` holds `bytes` bytes of TEXT and BLOB values,
    /// key values included, more than `BundleFormat.maxRecordValueBytes` (Protocol/bundle.md §4.1,
    /// R36). This also covers a single value above `BundleFormat.maxValueLength`, which is the same
    /// size.
    case recordTooLarge(table: String, key: [History.Column], bytes: Int)
    /// Transaction `sequence` of `origin` has an author or context name (`field`) of `bytes` bytes,
    /// outside the 1 to `BundleFormat.maxNameLength` a bundle carries (§4.1): every reader would
    /// reject the bundle. History made by a build that let such a name in holds it.
    case nameOutOfRange(origin: Replica.ID, sequence: Int64, field: String, bytes: Int)

    public var description: String {
        switch self {
        case .recordTooLarge(let table, let key, let bytes):
            return "row \(Self.describe(key)) of table '\(table)' holds \(bytes) bytes of TEXT and BLOB values; "
                + "a bundle record holds at most \(BundleFormat.maxRecordValueBytes) bytes (64 MiB)"
        case .nameOutOfRange(let origin, let sequence, let field, let bytes):
            return
                "transaction \(origin.short) #\(sequence) has \(bytes == 0 ? "an empty \(field)" : "a \(field) of \(bytes) bytes"); "
                + "a bundle carries names of 1 to \(BundleFormat.maxNameLength) bytes"
        }
    }

    /// A row key for messages: `name = value` pairs, each value cut to a short excerpt (a key may be
    /// a large BLOB or TEXT).
    public static func describe(_ key: [History.Column]) -> String {
        let pairs = key.map { column -> String in
            let value: String
            switch column.value {
            case .text(let s) where s.utf8.count > 48: value = "'" + String(s.prefix(32)) + "…' (\(s.utf8.count) bytes)"
            case .blob(let b) where b.count > 24:
                value = "x'" + HexCoding.encode(Array(b.prefix(16))) + "…' (\(b.count) bytes)"
            default: value = column.value.description
            }
            return "\(column.name) = \(value)"
        }
        return "(" + pairs.joined(separator: ", ") + ")"
    }
}

extension RecordEncoding {
    /// The bytes a value counts towards its record's limit (§4.1): the length of a TEXT or BLOB.
    static func valueBytes(_ v: SQLValue) -> Int {
        switch v {
        case .text(let s): return s.utf8.count
        case .blob(let b): return b.count
        case .null, .integer, .real: return 0
        }
    }

    /// The value bytes (§4.1) of a change as §4.3 encodes it: its key values and the columns it carries.
    static func valueBytes(_ c: History.Change) -> Int {
        var total = c.key.reduce(0) { $0 + valueBytes($1.value) }
        // The columns `carriedColumns` returns, counted without building that array.
        for column in c.type == .delete ? c.tombstone ?? [] : c.values where c.type == .update || !isKey(column, of: c)
        {
            total += valueBytes(column.value)
        }
        return total
    }

    /// The value bytes (§4.1) of a row state (§4.4): its key values and its cells.
    static func valueBytes(_ r: RowState) -> Int {
        r.key.reduce(0) { $0 + valueBytes($1.value) } + r.cells.reduce(0) { $0 + valueBytes($1.value) }
    }
}
