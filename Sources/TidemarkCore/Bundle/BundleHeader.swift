import Crypto

/// The header frame of a bundle (§3.3): who sent it, what it brings, and the tables and origin
/// ranges its transactions use.
public struct BundleHeader: Sendable, Hashable {
    /// What the bundle is.
    public var kind: BundleFormat.Kind
    /// The sender's replica name (informational; identity is the key).
    public var senderName: String
    /// When the sender wrote it.
    public var created: HLCTimestamp
    /// The token the sender assumed the receiver holds: the bundle's causal prerequisites.
    public var since: History.Token
    /// The sender's token when it wrote the bundle; for a watermark, the token the sender has applied.
    public var through: History.Token
    /// The tables the transactions touch.
    public var tables: [TableSchema]
    /// One contiguous range of transactions per origin.
    public var ranges: [OriginRange]
    /// The schema versions the records were written under (Protocol/schema.md §4): the lineage
    /// from the first migration to the newest version the bundle needs. Empty when every record
    /// was written under the initial schema.
    public var lineage: [Schema.Version]
    /// Where the transactions of a range start being written under a later schema version.
    public var schemaRuns: [SchemaRun]
    /// For a watermark: the digest of the rows the sender holds at `through` (Protocol/exchange.md
    /// §8), when it knows it.
    public var digest: RowDigest?
    /// For a snapshot: the generation floors of the sender's tables that have one (Protocol/pruning.md
    /// §6.3), in ascending order of name.
    public var floors: [GenerationFloor]

    /// What a receiver must hold before it can apply the bundle: `since`, and for each origin the
    /// transaction before its range (Protocol/exchange.md §4.3).
    public var prerequisites: History.Token {
        var needed = since
        for range in ranges { needed[range.origin] = max(needed[range.origin], range.first - 1) }
        return needed
    }

    /// Creates a header.
    public init(
        kind: BundleFormat.Kind, senderName: String, created: HLCTimestamp, since: History.Token,
        through: History.Token,
        tables: [TableSchema], ranges: [OriginRange], lineage: [Schema.Version] = [], schemaRuns: [SchemaRun] = [],
        digest: RowDigest? = nil, floors: [GenerationFloor] = []
    ) {
        self.kind = kind
        self.senderName = senderName
        self.created = created
        self.since = since
        self.through = through
        self.tables = tables
        self.ranges = ranges.sorted { $0.origin < $1.origin }
        self.lineage = lineage
        self.schemaRuns = schemaRuns.sorted { ($0.origin, $0.first) < ($1.origin, $1.first) }
        self.digest = digest
        self.floors = floors.sorted { $0.table.utf8.lexicographicallyPrecedes($1.table.utf8) }
    }

    /// The transactions of `origin` from sequence `first` on (up to the next run of that origin)
    /// were written under the schema version at `position` of the lineage.
    public struct SchemaRun: Sendable, Hashable {
        /// The origin.
        public var origin: Replica.ID
        /// The first sequence number written under `position`.
        public var first: Int64
        /// The lineage position, 1 … lineage count.
        public var position: Int

        /// Creates a run.
        public init(origin: Replica.ID, first: Int64, position: Int) {
            self.origin = origin
            self.first = first
            self.position = position
        }
    }

    /// The lineage position (0: the initial schema) transaction `sequence` of `origin` was written under.
    public func schemaPosition(of origin: Replica.ID, sequence: Int64) -> Int {
        schemaRuns.last { $0.origin == origin && $0.first <= sequence }?.position ?? 0
    }

    /// The newest lineage position the records need: for a snapshot every row state is written
    /// under the last version of the lineage.
    public var neededSchemaPosition: Int {
        kind == .changes ? schemaRuns.map(\.position).max() ?? 0 : lineage.count
    }

    /// Header attribute ids (Protocol/bundle.md §3.3).
    enum Attribute {
        /// The schema lineage (Protocol/schema.md §4).
        static let schemaLineage: UInt64 = 2
        /// A watermark's row digest (Protocol/exchange.md §8).
        static let rowDigest: UInt64 = 3
        /// A snapshot's generation floors (Protocol/pruning.md §6.3).
        static let generationFloors: UInt64 = 4
    }

    /// A defect in a header attribute's data, which the header reports at the offset it reached.
    struct AttributeDefect: Error {
        var why: String
    }

    /// A table as the sender tracks it.
    public struct TableSchema: Sendable, Hashable {
        /// The table name.
        public var name: String
        /// Primary-key columns in key order.
        public var keyColumns: [String]
        /// Every tracked column, key columns included, sorted by name (bytewise UTF-8).
        public var columns: [String]

        /// Creates a schema entry; `columns` are sorted canonically.
        public init(name: String, keyColumns: [String], columns: [String]) {
            self.name = name
            self.keyColumns = keyColumns
            self.columns = columns.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
    }

    /// The transactions of one origin in this bundle: sequence numbers `first...last`, continuing
    /// the origin's hash chain from `previous` (the chain hash after transaction `first - 1`).
    public struct OriginRange: Sendable, Hashable {
        /// The origin's Ed25519 public key.
        public var publicKey: [UInt8]
        /// The first sequence number included.
        public var first: Int64
        /// The last sequence number included.
        public var last: Int64
        /// The chain hash before `first`.
        public var previous: [UInt8]

        /// The origin's identity.
        public var origin: Replica.ID { Replica.ID(publicKey: publicKey) }

        /// Creates a range.
        public init(publicKey: [UInt8], first: Int64, last: Int64, previous: [UInt8]) {
            self.publicKey = publicKey
            self.first = first
            self.last = last
            self.previous = previous
        }
    }

    // MARK: - Coding

    func encoded() -> [UInt8] {
        var out: [UInt8] = [kind.rawValue]
        RecordEncoding.string(senderName, &out)
        RecordEncoding.varint(UInt64(bitPattern: created.packed), &out)
        RecordEncoding.token(since, &out)
        RecordEncoding.token(through, &out)
        RecordEncoding.varint(UInt64(tables.count), &out)
        for t in tables {
            RecordEncoding.string(t.name, &out)
            RecordEncoding.varint(UInt64(t.keyColumns.count), &out)
            for k in t.keyColumns { RecordEncoding.string(k, &out) }
            RecordEncoding.varint(UInt64(t.columns.count), &out)
            for c in t.columns { RecordEncoding.string(c, &out) }
        }
        RecordEncoding.varint(UInt64(ranges.count), &out)
        for r in ranges {
            out += r.publicKey
            RecordEncoding.varint(UInt64(r.first), &out)
            RecordEncoding.varint(UInt64(r.last), &out)
            out += r.previous
        }
        // Attributes in ascending order of id.
        var attributes: [(id: UInt64, data: [UInt8])] = []
        if !lineage.isEmpty {
            var data: [UInt8] = []
            RecordEncoding.varint(UInt64(lineage.count), &data)
            for version in lineage { data += version.change.encoded() }
            RecordEncoding.varint(UInt64(schemaRuns.count), &data)
            for run in schemaRuns {
                RecordEncoding.varint(UInt64(ranges.firstIndex { $0.origin == run.origin }!), &data)
                RecordEncoding.varint(UInt64(run.first), &data)
                RecordEncoding.varint(UInt64(run.position), &data)
            }
            attributes.append((Attribute.schemaLineage, data))
        }
        if let digest { attributes.append((Attribute.rowDigest, digest.encoded())) }
        if !floors.isEmpty { attributes.append((Attribute.generationFloors, GenerationFloor.encoded(floors))) }
        RecordEncoding.varint(UInt64(attributes.count), &out)
        for attribute in attributes {
            RecordEncoding.varint(attribute.id, &out)
            RecordEncoding.varint(UInt64(attribute.data.count), &out)
            out += attribute.data
        }
        return out
    }

    /// Reads a header payload (Protocol/bundle.md §3.3). Long by design: it reads the fields in
    /// file order with each check where the spec puts it, which fixes the rule a defect is
    /// reported under (§5.3); split up, that order would be harder to see.
    static func decode(_ payload: [UInt8], frameOffset: Int, payloadOffset: Int? = nil) throws -> BundleHeader {
        var r = PayloadReader(payload, base: payloadOffset ?? frameOffset)
        func bad(_ why: String, _ rule: BundleRule = .badHeader) -> BundleError {
            .framing(.badHeader(why, rule: rule), offset: payloadOffset.map { $0 + r.position } ?? frameOffset)
        }
        guard let kind = BundleFormat.Kind(rawValue: try r.byte()) else {
            throw bad("unknown bundle kind", .unsupportedKind)
        }
        let name = try r.string()
        guard !name.isEmpty else { throw bad("empty sender name", .emptyName) }
        let created = HLCTimestamp(packed: Int64(bitPattern: try r.varint()))
        let since = try r.token()
        let through = try r.token()
        let tableCount = try r.varint()
        guard tableCount <= UInt64(BundleFormat.maxHeaderEntries) else { throw bad("too many tables", .limitExceeded) }
        var tables: [TableSchema] = []
        for _ in 0..<tableCount {
            let table = try r.string()
            let keyCount = try r.varint()
            guard (1...UInt64(BundleFormat.maxColumns)).contains(keyCount) else {
                throw bad("table \(table): bad key column count", .badColumnCount)
            }
            let keys = try (0..<keyCount).map { _ in try r.string() }
            let columnCount = try r.varint()
            guard columnCount <= UInt64(BundleFormat.maxColumns) else {
                throw bad("table \(table): too many columns", .badColumnCount)
            }
            let columns = try (0..<columnCount).map { _ in try r.string() }
            guard !table.isEmpty, !keys.contains(""), !columns.contains("") else { throw bad("empty name", .emptyName) }
            guard zip(columns, columns.dropFirst()).allSatisfy({ $0.utf8.lexicographicallyPrecedes($1.utf8) }) else {
                throw bad("table \(table): columns not sorted", .columnsNotCanonical)
            }
            let columnBytes = Set(columns.map { Array($0.utf8) })
            guard Set(keys.map { Array($0.utf8) }).count == keys.count,
                keys.allSatisfy({ columnBytes.contains(Array($0.utf8)) })
            else {
                throw bad("table \(table): key columns must be distinct columns of the table")
            }
            guard !tables.contains(where: { Array($0.name.utf8) == Array(table.utf8) }) else {
                throw bad("table \(table) listed twice")
            }
            tables.append(TableSchema(name: table, keyColumns: keys, columns: columns))
        }
        let rangeCount = try r.varint()
        guard rangeCount <= UInt64(BundleFormat.maxHeaderEntries) else {
            throw bad("too many origin ranges", .limitExceeded)
        }
        var ranges: [OriginRange] = []
        for _ in 0..<rangeCount {
            let key = try r.take(32)
            let first = try r.varint()
            let last = try r.varint()
            let previous = try r.take(32)
            guard first >= 1, last >= first, last <= UInt64(Int64.max) else { throw bad("bad origin range", .badRange) }
            let range = OriginRange(publicKey: key, first: Int64(first), last: Int64(last), previous: previous)
            if let prior = ranges.last, !(prior.origin < range.origin) {
                throw bad("origin ranges not in ascending order", .badRange)
            }
            if first == 1 && previous != Chain.genesis(range.origin) {
                throw bad("origin range starting at #1 must continue the genesis hash", .badRange)
            }
            ranges.append(range)
        }
        var lineage: [Schema.Version] = []
        var runs: [SchemaRun] = []
        var digest: RowDigest?
        var floors: [GenerationFloor] = []
        let attributeCount = try r.varint()
        guard attributeCount <= 2 else { throw bad("more than two header attributes", .unknownAttribute) }
        var lastID: UInt64 = 0
        for _ in 0..<attributeCount {
            let id = try r.varint()
            guard [Attribute.schemaLineage, Attribute.rowDigest, Attribute.generationFloors].contains(id) else {
                throw bad("unknown header attribute", .unknownAttribute)
            }
            guard id > lastID else { throw bad("header attributes not in ascending order of id") }
            lastID = id
            let length = try r.varint()
            guard length <= UInt64(BundleFormat.maxFrameLength) else {
                throw bad("header attribute longer than 16 MiB", .limitExceeded)
            }
            guard length <= UInt64(r.bytes.count - r.position) else { throw bad("ends early") }
            let start = r.position
            let end = start + Int(length)
            /// Reads the attribute's data, and only that, with `decode`, reporting its defects as
            /// the header's: a field the data ends inside ends early (R13), whatever bytes follow.
            func data<T>(_ what: String, _ decode: (inout PayloadReader) throws -> T) throws -> T {
                var attribute = PayloadReader(Array(r.bytes[start..<end]), base: r.base + start)
                let value: T
                do { value = try decode(&attribute) } catch let defect as AttributeDefect {
                    r.position = start + attribute.position
                    throw bad(defect.why)
                }
                r.position = start + attribute.position
                guard attribute.atEnd else { throw bad("\(what): bytes left over") }
                return value
            }
            switch id {
            case Attribute.rowDigest:
                guard kind == .watermark else { throw bad("a row digest belongs only in a watermark") }
                digest = try data("row digest", RowDigest.decode)
            case Attribute.generationFloors:
                guard kind == .snapshot else { throw bad("generation floors belong only in a snapshot") }
                floors = try data("generation floors", GenerationFloor.decode)
            default:
                (lineage, runs) = try data("schema lineage") { try decodeLineage(&$0, ranges: ranges, kind: kind) }
            }
        }
        guard r.atEnd else { throw bad("extra bytes after the header") }
        if kind != .changes && !ranges.isEmpty { throw bad("only a change bundle carries transactions") }
        return BundleHeader(
            kind: kind, senderName: name, created: created, since: since, through: through, tables: tables,
            ranges: ranges,
            lineage: lineage, schemaRuns: runs, digest: digest, floors: floors)
    }

    /// Reads the schema lineage attribute's data (Protocol/schema.md §4).
    private static func decodeLineage(_ r: inout PayloadReader, ranges: [OriginRange], kind: BundleFormat.Kind) throws
        -> ([Schema.Version], [SchemaRun])
    {
        func bad(_ why: String) -> BundleError {
            .framing(.badHeader("schema lineage: \(why)"), offset: r.base + r.position)
        }
        guard kind != .watermark else { throw bad("a watermark carries no records, so no schema") }
        let count = try r.varint()
        guard count >= 1, count <= UInt64(Schema.maxEntries) else { throw bad("1 to \(Schema.maxEntries) versions") }
        var changes: [Schema.Change] = []
        for _ in 0..<count { changes.append(try Schema.Change.decode(&r)) }
        let lineage = Schema.lineage(changes)
        let runCount = try r.varint()
        guard runCount <= UInt64(Schema.maxEntries) else { throw bad("too many runs") }
        var runs: [SchemaRun] = []
        var previous: (index: UInt64, first: UInt64, position: UInt64)?
        for _ in 0..<runCount {
            let index = try r.varint()
            let first = try r.varint()
            let position = try r.varint()
            guard index < UInt64(ranges.count) else { throw bad("a run names no range") }
            let range = ranges[Int(index)]
            guard first >= UInt64(range.first), first <= UInt64(range.last) else {
                throw bad("a run starts outside its range")
            }
            guard position >= 1, position <= count else { throw bad("a run names no version of the lineage") }
            if let previous {
                let ascending =
                    previous.index < index
                    || (previous.index == index && previous.first < first && previous.position < position)
                guard ascending else { throw bad("runs not in canonical order") }
            }
            previous = (index, first, position)
            runs.append(SchemaRun(origin: range.origin, first: Int64(first), position: Int(position)))
        }
        if kind == .changes {
            guard runs.map(\.position).max() == Int(count) else {
                throw bad("the last version is needed by no transaction")
            }
        } else if !runs.isEmpty {
            throw bad("runs in a bundle without transactions")
        }
        return (lineage, runs)
    }
}
