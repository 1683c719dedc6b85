import Crypto

/// Reads and verifies a bundle in one streaming pass (§3–§5).
///
/// Everything the decoder returns is *unverified* until `finish()` returns a `VerifiedBundle`:
/// only then are the sender's signature, every origin's chain and attestation, and the framing
/// known to be intact. Callers that apply changes while decoding must do so in a transaction they
/// commit only after `finish()` succeeds.
public final class BundleDecoder {
    /// The sender's Ed25519 public key (unverified until `finish()`).
    public let senderKey: [UInt8]
    /// The header (unverified until `finish()`).
    public let header: BundleHeader
    /// The sender's identity.
    public var sender: Replica.ID { Replica.ID(publicKey: senderKey) }

    var frames: FrameReader
    var chunk: [UInt8] = []
    var position = 0
    var consumedBefore = 0
    var pending: FrameReader.Frame?

    struct ChainState {
        var head: [UInt8]
        /// The last sequence number read; the range starts at `done + 1`.
        var done: Int64
        var last: Int64
        var timestamp: HLCTimestamp
    }
    var chains: [Replica.ID: ChainState] = [:]
    /// Names compare by their UTF-8 bytes, never by Unicode equivalence (§4.1).
    struct TableLookup {
        let schema: BundleHeader.TableSchema
        let name: [UInt8]
        let keys: [[UInt8]]
        let columns: [[UInt8]]
        init(_ schema: BundleHeader.TableSchema) {
            self.schema = schema
            name = Array(schema.name.utf8)
            keys = schema.keyColumns.map { Array($0.utf8) }
            columns = schema.columns.map { Array($0.utf8) }
        }
    }
    var tables: [TableLookup] = []
    var headerNames = HeaderNames([])
    var open: History.TransactionHeader?
    var changesLeft = 0
    var txHasher = SHA256()
    var hashedFrom = 0
    /// Whether a transaction record is being read, and whether its hasher exists yet (it needs the
    /// origin, the record's first field): bytes of the record read before that wait in `prefix`.
    var inRecord = false
    var hasherReady = false
    var prefix: [UInt8] = []
    /// Names read so far, by a hash of their bytes, so that a repeated name costs no allocation.
    var names: [UInt64: [(bytes: [UInt8], name: Name)]] = [:]
    var nameCount = 0
    /// The name read last at each place of a record (the table, then each column in order), which
    /// the same place of the next record of the table most often repeats: found by one comparison.
    var recentNames = [Name?](repeating: nil, count: 64)
    var recentNameBytes = [[UInt8]](repeating: [], count: 64)
    /// The origin of the clock read last: the clocks of a row state's cells most often share it.
    var recentOrigin: Replica.ID?
    /// The TEXT and BLOB bytes the change or row state being read has declared so far (§4.1, R36).
    var recordValueBytes = 0

    /// The transaction whose changes were all read most recently, with its chain hash.
    public internal(set) var lastCompleted: (head: History.TransactionHeader, chainHash: [UInt8])?
    /// Transactions and changes read so far.
    public internal(set) var transactionCount = 0
    /// Changes read so far.
    public internal(set) var changeCount = 0

    /// Reads the preamble and header.
    public init(_ source: some ByteSource) throws {
        frames = FrameReader(source)
        senderKey = try frames.readPreamble()
        let first = try frames.next()
        guard first.type == .header else { throw BundleError.framing(.missingHeader, offset: first.offset) }
        header = try BundleHeader.decode(first.payload, frameOffset: first.offset, payloadOffset: first.payloadOffset)
        for range in header.ranges {
            chains[range.origin] = ChainState(
                head: range.previous, done: range.first - 1, last: range.last, timestamp: .zero)
        }
        tables = header.tables.map { TableLookup($0) }
        headerNames = HeaderNames(tables)
    }

    // MARK: - Record stream

    func refill() throws -> Bool {
        if pending != nil { return false }
        if inRecord {
            if hasherReady {
                txHasher.update(data: chunk[hashedFrom..<position])
            } else {
                prefix += chunk[hashedFrom..<position]
            }
        }
        consumedBefore += chunk.count
        let frame = try frames.next()
        if frame.type == .transactions && frame.payload.isEmpty {
            throw BundleError.framing(.emptyFrame, offset: frame.offset)
        }
        guard frame.type == .transactions else {
            pending = frame
            chunk = []
            position = 0
            hashedFrom = 0
            return false
        }
        chunk = frame.payload
        position = 0
        hashedFrom = 0
        return true
    }

    func fail(_ r: BundleError.Record) -> BundleError { .record(r, offset: consumedBefore + position) }

    @inline(__always)
    func byte() throws -> UInt8 {
        if position == chunk.count { guard try refill() else { throw fail(.truncated) } }
        defer { position += 1 }
        return chunk[position]
    }

    func bytes(_ n: Int) throws -> [UInt8] {
        if n <= chunk.count - position {
            defer { position += n }
            return Array(chunk[position..<position + n])
        }
        var out: [UInt8] = []
        out.reserveCapacity(min(n, 1 << 20))
        while out.count < n {
            if position == chunk.count { guard try refill() else { throw fail(.truncated) } }
            let take = min(n - out.count, chunk.count - position)
            out += chunk[position..<position + take]
            position += take
        }
        return out
    }

    func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var count = 0
        while true {
            let b = try byte()
            count += 1
            if shift == 63 && b > 1 { throw fail(.badVarint) }
            result |= UInt64(b & 0x7f) << shift
            if b & 0x80 == 0 {
                if b == 0 && count > 1 { throw fail(.badVarint) }
                return result
            }
            shift += 7
            if shift > 63 { throw fail(.badVarint) }
        }
    }

    func length(limit: Int) throws -> Int {
        let n = try varint()
        guard n <= UInt64(limit) else { throw fail(.lengthTooLarge(n > UInt64(Int.max) ? Int.max : Int(n))) }
        return Int(n)
    }

    /// A name read from the record stream, with its number: the same bytes always have the same
    /// number, -1 for a name read after the first 4,096 distinct ones (not remembered).
    struct Name {
        let string: String
        let id: Int
    }

    func name() throws -> String { try internedName().string }

    /// Reads a name; `place` is where in its record it stands (0 for the table, then its columns
    /// in order), or nil where that is not known.
    func internedName(at place: Int? = nil) throws -> Name {
        let n = try length(limit: BundleFormat.maxNameLength)
        guard n > 0 else { throw fail(.emptyName) }
        guard n <= chunk.count - position else {
            let raw = try bytes(n)
            return try intern(raw, hash: Self.fnv1a(raw[...]))
        }
        // Most names repeat (tables, columns): find this one without copying its bytes.
        let slice = chunk[position..<position + n]
        let cached = place.flatMap { $0 < recentNames.count ? $0 : nil }
        if let cached, let recent = recentNames[cached], Self.same(recentNameBytes[cached], chunk, at: position, n) {
            position += n
            return recent
        }
        let hash = Self.fnv1a(slice)
        let name: Name
        if let known = names[hash]?.first(where: { $0.bytes.elementsEqual(slice) }) {
            name = known.name
        } else {
            name = try intern(Array(slice), hash: hash)
        }
        if let cached {
            recentNames[cached] = name
            recentNameBytes[cached] = Array(slice)
        }
        position += n
        return name
    }

    /// Reads a replica's identity (16 bytes).
    func origin() throws -> Replica.ID {
        let n = Replica.ID.byteCount
        if let recentOrigin, recentOrigin.isStored(in: chunk, at: position) {
            position += n
            return recentOrigin
        }
        let origin = Replica.ID(bytes: try bytes(n))!
        recentOrigin = origin
        return origin
    }

    /// The name with bytes `raw`: the one remembered, or a new one.
    func intern(_ raw: [UInt8], hash: UInt64) throws -> Name {
        // A name split across chunks may be remembered already: it keeps its number.
        if let known = names[hash]?.first(where: { $0.bytes == raw }) { return known.name }
        guard let s = raw.withUnsafeBufferPointer(UTF8Text.string) else { throw fail(.invalidUTF8) }
        guard nameCount < 4096 else { return Name(string: s, id: -1) }
        let name = Name(string: s, id: nameCount)
        names[hash, default: []].append((raw, name))
        nameCount += 1
        return name
    }

    /// Whether `bytes` are the `count` bytes of `chunk` at `offset` (which are there).
    private static func same(_ bytes: [UInt8], _ chunk: [UInt8], at offset: Int, _ count: Int) -> Bool {
        guard bytes.count == count else { return false }
        return bytes.withUnsafeBufferPointer { a in
            chunk.withUnsafeBufferPointer { b in
                for i in 0..<count where a[i] != b[offset + i] { return false }
                return true
            }
        }
    }

    /// FNV-1a over `bytes`: a cheap hash for the name cache (collisions only cost a comparison).
    private static func fnv1a(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    func optionalName() throws -> String? {
        switch try byte() {
        case 0: return nil
        case 1: return try name()
        case let b: throw fail(.badPresenceByte(b))
        }
    }

    /// Reads a TEXT or BLOB length: within the value limit (R16), then within what the record's
    /// earlier values left of the record limit (R36), both before a byte of the value is read.
    func valueLength() throws -> Int {
        let n = try length(limit: BundleFormat.maxValueLength)
        let total = recordValueBytes + n
        guard total <= BundleFormat.maxRecordValueBytes else { throw fail(.recordTooLarge(bytes: total)) }
        recordValueBytes = total
        return n
    }

    /// Reads one value (§4.1). TEXT and BLOB lengths count towards the current record's value bytes,
    /// which the caller resets at the start of each change or row state.
    func value() throws -> SQLValue {
        let tag = try byte()
        switch tag {
        case 0: return .null
        case 1: return .integer(RecordEncoding.unzigzag(try varint()))
        case 2:
            var bits: UInt64 = 0
            for _ in 0..<8 { bits = bits << 8 | UInt64(try byte()) }
            return .real(Double(bitPattern: bits))
        case 3:
            let n = try valueLength()
            let text: String?
            if n <= chunk.count - position {
                let start = position
                text = chunk.withUnsafeBufferPointer { UTF8Text.string(.init(rebasing: $0[start..<start + n])) }
                position += n
            } else {
                text = try bytes(n).withUnsafeBufferPointer(UTF8Text.string)
            }
            guard let text else { throw fail(.invalidUTF8) }
            return .text(text)
        case 4: return .blob(try bytes(try valueLength()))
        default: throw fail(.unknownValueTag(tag))
        }
    }

    /// Reads a record's attributes (§6.2): an even id must be understood, an odd one may be
    /// skipped. Changes and row states define none.
    func attributes() throws {
        let count = try varint()
        if count > 0 {
            for _ in 0..<count {
                let id = try varint()
                if id % 2 == 0 { throw fail(.unknownAttribute(id)) }
                _ = try bytes(try length(limit: BundleFormat.maxFrameLength))
            }
        }
    }

    /// Reads a transaction's attributes: the schema version (Protocol/schema.md §4) must be there
    /// exactly when the header's runs place the transaction after the initial schema, and name
    /// the version they place it under.
    func transactionAttributes(_ head: History.TransactionHeader) throws {
        let count = try varint()
        var schema: [UInt8]?
        for _ in 0..<count {
            let id = try varint()
            if id == Schema.transactionAttribute {
                guard schema == nil else {
                    throw fail(.schemaVersionMismatch("transaction #\(head.sequence) names its schema version twice"))
                }
                schema = try bytes(try length(limit: BundleFormat.maxFrameLength))
                continue
            }
            if id % 2 == 0 { throw fail(.unknownAttribute(id)) }
            _ = try bytes(try length(limit: BundleFormat.maxFrameLength))
        }
        let expected = head.schemaPosition == 0 ? nil : header.lineage[head.schemaPosition - 1].id
        guard schema == expected else {
            throw fail(
                .schemaVersionMismatch(
                    "transaction \(head.origin.short) #\(head.sequence) was written under "
                        + (schema.map { "version \(HexCoding.encode($0.prefix(6)))" } ?? "the initial schema")
                        + " but the header says "
                        + (expected.map { "version \(HexCoding.encode($0.prefix(6)))" } ?? "the initial schema")))
        }
    }
}
