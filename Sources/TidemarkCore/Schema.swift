import Crypto

/// Schema versions (Protocol/schema.md). Each migration that changes what replicates makes a new
/// version of the schema, identified by a hash of its predecessor's id and of the change itself,
/// so two replicas that made the same migration agree on its id, and two that made different
/// migrations from the same version are told apart: a fork.
public enum Schema {
    /// The id of the schema a store starts with, before any migration: 32 zero bytes (§2).
    /// Bundles never carry it; a transaction without a schema attribute was written under it.
    public static let initialID = [UInt8](repeating: 0, count: 32)

    /// §2: the domain-separation prefix of a version id.
    public static let idPrefix = Array("tidemark-schema-v1".utf8) + [0]

    /// The id of the transaction attribute that names the version a transaction was written
    /// under (§4): even, so a reader that does not know it rejects the bundle.
    public static let transactionAttribute: UInt64 = 2

    /// The most operations one version may hold, and the most versions a lineage may list (§3).
    public static let maxEntries = 4096

    /// One change to what replicates (§3).
    public enum Operation: Sendable, Hashable, CustomStringConvertible {
        /// A table starts being tracked, with these key columns (in key order) and columns (every
        /// tracked column, key columns included).
        case track(table: String, keyColumns: [String], columns: [String])
        /// A tracked table gains a column.
        case addColumn(table: String, column: String)
        /// A tracked table is renamed; its rows keep their identity.
        case renameTable(table: String, to: String)
        /// A column of a tracked table is renamed; it keeps its identity (its values and clocks).
        case renameColumn(table: String, column: String, to: String)
        /// A non-key column of a tracked table is dropped.
        case dropColumn(table: String, column: String)
        /// A table stops being tracked; it had these key columns and columns.
        case untrack(table: String, keyColumns: [String], columns: [String])

        public var description: String {
            switch self {
            case .track(let table, let keys, let columns):
                return "track table \(table)(\(columns.joined(separator: ", "))) key(\(keys.joined(separator: ", ")))"
            case .addColumn(let table, let column): return "add column \(table).\(column)"
            case .renameTable(let table, let to): return "rename table \(table) to \(to)"
            case .renameColumn(let table, let column, let to): return "rename column \(table).\(column) to \(to)"
            case .dropColumn(let table, let column): return "drop column \(table).\(column)"
            case .untrack(let table, _, _): return "untrack table \(table)"
            }
        }

        /// The table the operation is about, as the parent version names it (a tracked table: its
        /// new name).
        public var table: String {
            switch self {
            case .track(let table, _, _), .addColumn(let table, _), .renameTable(let table, _),
                .renameColumn(let table, _, _),
                .dropColumn(let table, _), .untrack(let table, _, _):
                return table
            }
        }

        /// A kind byte and names: the operations that carry only names.
        private static func encodeNames(_ kind: UInt8, _ names: [String], _ out: inout [UInt8]) {
            out.append(kind)
            for name in names { RecordEncoding.string(name, &out) }
        }

        /// A table's name, key columns in key order and columns in ascending bytewise order.
        private static func encodeTable(_ table: String, keys: [String], columns: [String], _ out: inout [UInt8]) {
            RecordEncoding.string(table, &out)
            RecordEncoding.varint(UInt64(keys.count), &out)
            for key in keys { RecordEncoding.string(key, &out) }
            let sorted = columns.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            RecordEncoding.varint(UInt64(sorted.count), &out)
            for column in sorted { RecordEncoding.string(column, &out) }
        }

        func encoded() -> [UInt8] {
            var out: [UInt8] = []
            switch self {
            case .track(let table, let keys, let columns):
                out.append(1)
                Self.encodeTable(table, keys: keys, columns: columns, &out)
            case .addColumn(let table, let column): Self.encodeNames(2, [table, column], &out)
            case .renameTable(let table, let to): Self.encodeNames(3, [table, to], &out)
            case .renameColumn(let table, let column, let to): Self.encodeNames(4, [table, column, to], &out)
            case .dropColumn(let table, let column): Self.encodeNames(5, [table, column], &out)
            case .untrack(let table, let keys, let columns):
                out.append(6)
                Self.encodeTable(table, keys: keys, columns: columns, &out)
            }
            return out
        }
    }

    /// The content of one version: what its migration changed in what replicates, in canonical
    /// order (operations sorted by their encoding, §3).
    public struct Change: Sendable, Hashable, CustomStringConvertible {
        /// The operations, in canonical order.
        public let operations: [Operation]

        /// Creates a change; the operations are put in canonical order (a tracked table's columns
        /// too) and repeats dropped.
        public init(_ operations: [Operation]) {
            var seen = Set<[UInt8]>()
            let sorted = { (columns: [String]) in columns.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
            self.operations = operations.map { operation -> Operation in
                switch operation {
                case .track(let table, let keys, let columns):
                    return .track(table: table, keyColumns: keys, columns: sorted(columns))
                case .untrack(let table, let keys, let columns):
                    return .untrack(table: table, keyColumns: keys, columns: sorted(columns))
                default: return operation
                }
            }
            .map { ($0.encoded(), $0) }
            .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            .filter { seen.insert($0.0).inserted }
            .map(\.1)
        }

        /// §3: operation count, then each operation.
        public func encoded() -> [UInt8] {
            var out: [UInt8] = []
            RecordEncoding.varint(UInt64(operations.count), &out)
            for operation in operations { out += operation.encoded() }
            return out
        }

        /// Decodes a change encoded by `encoded()`; throws `BundleError` if it is not canonical.
        public init(encoded bytes: [UInt8]) throws {
            var reader = PayloadReader(bytes)
            self = try Self.decode(&reader)
            guard reader.atEnd else {
                throw BundleError.framing(.badHeader("schema change: bytes left over"), offset: reader.position)
            }
        }

        /// Decodes a change, rejecting anything not in canonical form. Long by design: one case
        /// per operation of Protocol/schema.md §3, read field by field in encoding order.
        static func decode(_ reader: inout PayloadReader) throws -> Change {
            func bad(_ why: String) -> BundleError {
                .framing(.badHeader("schema lineage: \(why)"), offset: reader.base + reader.position)
            }
            let count = try reader.varint()
            guard count >= 1, count <= UInt64(maxEntries) else {
                throw bad("a version must hold 1 to \(maxEntries) operations")
            }
            var operations: [Operation] = []
            var previous: [UInt8]?
            for _ in 0..<count {
                let start = reader.position
                let operation: Operation
                func name() throws -> String {
                    let name = try reader.string()
                    guard !name.isEmpty else { throw bad("empty name") }
                    return name
                }
                func table() throws -> (String, [String], [String]) {
                    let table = try name()
                    let keyCount = try reader.varint()
                    guard keyCount >= 1, keyCount <= UInt64(BundleFormat.maxColumns) else {
                        throw bad("table \(table): bad key column count")
                    }
                    let keys = try (0..<keyCount).map { _ in try reader.string() }
                    let columnCount = try reader.varint()
                    guard columnCount <= UInt64(BundleFormat.maxColumns) else {
                        throw bad("table \(table): too many columns")
                    }
                    let columns = try (0..<columnCount).map { _ in try reader.string() }
                    guard !columns.contains(""),
                        zip(columns, columns.dropFirst()).allSatisfy({ $0.utf8.lexicographicallyPrecedes($1.utf8) }),
                        Set(keys.map { Array($0.utf8) }).count == keys.count,
                        keys.allSatisfy({ k in columns.contains { Array($0.utf8) == Array(k.utf8) } })
                    else { throw bad("table \(table): columns not canonical") }
                    return (table, keys, columns)
                }
                switch try reader.byte() {
                case 1:
                    let (table, keys, columns) = try table()
                    operation = .track(table: table, keyColumns: keys, columns: columns)
                case 2:
                    operation = .addColumn(table: try name(), column: try name())
                case 3:
                    let (from, to) = (try name(), try name())
                    guard from != to else { throw bad("table \(from) renamed to itself") }
                    operation = .renameTable(table: from, to: to)
                case 4:
                    let (table, from, to) = (try name(), try name(), try name())
                    guard from != to else { throw bad("column \(table).\(from) renamed to itself") }
                    operation = .renameColumn(table: table, column: from, to: to)
                case 5:
                    operation = .dropColumn(table: try name(), column: try name())
                case 6:
                    let (table, keys, columns) = try table()
                    operation = .untrack(table: table, keyColumns: keys, columns: columns)
                case let kind:
                    throw bad("unknown operation \(kind)")
                }
                let bytes = Array(reader.bytes[start..<reader.position])
                if let previous, !previous.lexicographicallyPrecedes(bytes) {
                    throw bad("operations not in canonical order")
                }
                previous = bytes
                operations.append(operation)
            }
            return Change(operations)
        }

        public var description: String { operations.map(\.description).joined(separator: "; ") }
    }

    /// One version of a lineage: its position (1 for the first migration), id and change.
    public struct Version: Sendable, Hashable, CustomStringConvertible {
        /// 1 for the first migration's version, 2 for the next… (0 is the initial schema).
        public let position: Int
        /// `SHA-256(prefix || parent id || change)` (§2).
        public let id: [UInt8]
        /// What the migration changed.
        public let change: Change

        /// The id as 64 lowercase hex digits.
        public var hexID: String { HexCoding.encode(id) }
        /// The first 12 hex digits, for messages.
        public var shortID: String { String(hexID.prefix(12)) }
        /// `v<position> <short id>`.
        public var description: String { "v\(position) \(shortID)" }

        /// A version as recorded elsewhere (its id was derived when it was first read).
        public init(position: Int, id: [UInt8], change: Change) {
            self.position = position
            self.id = id
            self.change = change
        }

        /// Creates the version that follows `parent` (nil: the initial schema).
        public init(after parent: Version?, change: Change) {
            position = (parent?.position ?? 0) + 1
            id = Schema.versionID(parent: parent?.id ?? Schema.initialID, change: change)
            self.change = change
        }
    }

    /// §2: the id of the version that follows `parent` with `change`.
    public static func versionID(parent: [UInt8], change: Change) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: idPrefix)
        hasher.update(data: parent)
        hasher.update(data: change.encoded())
        return Array(hasher.finalize())
    }

    /// The versions that the changes make, in order, starting from the initial schema.
    public static func lineage(_ changes: [Change]) -> [Version] {
        var versions: [Version] = []
        for change in changes { versions.append(Version(after: versions.last, change: change)) }
        return versions
    }
}
