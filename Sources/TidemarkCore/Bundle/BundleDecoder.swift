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

    private var frames: FrameReader
    private var chunk: [UInt8] = []
    private var position = 0
    private var consumedBefore = 0
    private var pending: FrameReader.Frame?

    private struct ChainState {
        var head: [UInt8]
        /// The last sequence number read; the range starts at `done + 1`.
        var done: Int64
        var last: Int64
        var timestamp: HLCTimestamp
    }
    private var chains: [Replica.ID: ChainState] = [:]
    /// Names compare by their UTF-8 bytes, never by Unicode equivalence (§4.1).
    private struct TableLookup {
        let schema: BundleHeader.TableSchema
        let name: [UInt8]
        let keys: [[UInt8]]
        /// A set: a wide table's changes are checked column by column.
        let columns: Set<[UInt8]>
        init(_ schema: BundleHeader.TableSchema) {
            self.schema = schema
            name = Array(schema.name.utf8)
            keys = schema.keyColumns.map { Array($0.utf8) }
            columns = Set(schema.columns.map { Array($0.utf8) })
        }

        /// Whether `name` is one of `names`, byte for byte (not by Unicode equivalence).
        static func contains(_ names: [[UInt8]], _ name: String) -> Bool {
            names.contains { $0.elementsEqual(name.utf8) }
        }

        static func contains(_ names: Set<[UInt8]>, _ name: String) -> Bool { names.contains(Array(name.utf8)) }
    }
    private var tables: [TableLookup] = []
    private var open: History.TransactionHeader?
    private var changesLeft = 0
    private var txHasher = SHA256()
    private var hashedFrom = 0
    /// Whether a transaction record is being read, and whether its hasher exists yet (it needs the
    /// origin, the record's first field): bytes of the record read before that wait in `prefix`.
    private var inRecord = false
    private var hasherReady = false
    private var prefix: [UInt8] = []
    /// Names read so far, by a hash of their bytes, so that a repeated name costs no allocation.
    private var names: [UInt64: [(bytes: [UInt8], string: String)]] = [:]
    private var nameCount = 0
    /// The TEXT and BLOB bytes the change or row state being read has declared so far (§4.1, R36).
    private var recordValueBytes = 0

    /// The transaction whose changes were all read most recently, with its chain hash.
    public private(set) var lastCompleted: (head: History.TransactionHeader, chainHash: [UInt8])?
    /// Transactions and changes read so far.
    public private(set) var transactionCount = 0
    /// Changes read so far.
    public private(set) var changeCount = 0

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
    }

    // MARK: - Record stream

    private func refill() throws -> Bool {
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

    private func fail(_ r: BundleError.Record) -> BundleError { .record(r, offset: consumedBefore + position) }

    @inline(__always)
    private func byte() throws -> UInt8 {
        if position == chunk.count { guard try refill() else { throw fail(.truncated) } }
        defer { position += 1 }
        return chunk[position]
    }

    private func bytes(_ n: Int) throws -> [UInt8] {
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

    private func varint() throws -> UInt64 {
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

    private func length(limit: Int) throws -> Int {
        let n = try varint()
        guard n <= UInt64(limit) else { throw fail(.lengthTooLarge(n > UInt64(Int.max) ? Int.max : Int(n))) }
        return Int(n)
    }

    private func name() throws -> String {
        let n = try length(limit: BundleFormat.maxNameLength)
        guard n > 0 else { throw fail(.emptyName) }
        if n <= chunk.count - position {
            // Most names repeat (tables, columns): find this one without copying its bytes.
            let slice = chunk[position..<position + n]
            let hash = Self.fnv1a(slice)
            if let known = names[hash]?.first(where: { $0.bytes.elementsEqual(slice) }) {
                position += n
                return known.string
            }
            position += n
            return try intern(Array(slice), hash: hash)
        }
        let raw = try bytes(n)
        return try intern(raw, hash: Self.fnv1a(raw[...]))
    }

    private func intern(_ raw: [UInt8], hash: UInt64) throws -> String {
        guard let s = String(validating: raw, as: UTF8.self) else { throw fail(.invalidUTF8) }
        if nameCount < 4096 {
            names[hash, default: []].append((raw, s))
            nameCount += 1
        }
        return s
    }

    /// FNV-1a over `bytes`: a cheap hash for the name cache (collisions only cost a comparison).
    private static func fnv1a(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    private func optionalName() throws -> String? {
        switch try byte() {
        case 0: return nil
        case 1: return try name()
        case let b: throw fail(.badPresenceByte(b))
        }
    }

    /// Reads a TEXT or BLOB length: within the value limit (R16), then within what the record's
    /// earlier values left of the record limit (R36), both before a byte of the value is read.
    private func valueLength() throws -> Int {
        let n = try length(limit: BundleFormat.maxValueLength)
        let total = recordValueBytes + n
        guard total <= BundleFormat.maxRecordValueBytes else { throw fail(.recordTooLarge(bytes: total)) }
        recordValueBytes = total
        return n
    }

    /// Reads one value (§4.1). TEXT and BLOB lengths count towards the current record's value bytes,
    /// which the caller resets at the start of each change or row state.
    private func value() throws -> SQLValue {
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
                text = String(validating: chunk[position..<position + n], as: UTF8.self)
                position += n
            } else {
                text = String(validating: try bytes(n), as: UTF8.self)
            }
            guard let text else { throw fail(.invalidUTF8) }
            return .text(text)
        case 4: return .blob(try bytes(try valueLength()))
        default: throw fail(.unknownValueTag(tag))
        }
    }

    /// Reads a record's attributes (§6.2): an even id must be understood, an odd one may be
    /// skipped. Changes and row states define none.
    private func attributes() throws {
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
    private func transactionAttributes(_ head: History.TransactionHeader) throws {
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

    // MARK: - Transactions

    /// Reads the next row state of a snapshot bundle (§4.4), or nil after the last.
    public func nextRowState() throws -> RowState? {
        if position == chunk.count { guard try refill() else { return nil } }
        guard header.kind == .snapshot else { throw fail(.unexpectedRecord("a row state outside a snapshot")) }
        let table = try name()
        guard let lookup = tables.first(where: { $0.name.elementsEqual(table.utf8) }) else {
            throw fail(.columnsNotCanonical("table '\(table)' is not in the header"))
        }
        let generation = try varint()
        guard generation >= 1, generation <= UInt64(Int64.max) else { throw fail(.badGeneration(generation)) }
        let keyCount = try varint()
        guard keyCount >= 1, keyCount <= UInt64(BundleFormat.maxColumns) else {
            throw fail(.tooManyColumns(Int(min(keyCount, 1_000_000))))
        }
        recordValueBytes = 0
        var key: [History.Column] = []
        for _ in 0..<keyCount { key.append(History.Column(try name(), try value())) }
        guard key.count == lookup.keys.count, zip(key, lookup.keys).allSatisfy({ $0.name.utf8.elementsEqual($1) })
        else {
            throw fail(.columnsNotCanonical("key columns of '\(table)' do not match its header entry"))
        }
        let cellCount = try varint()
        guard cellCount <= UInt64(BundleFormat.maxColumns) else {
            throw fail(.tooManyColumns(Int(min(cellCount, 1_000_000))))
        }
        guard generation % 2 == 1 || cellCount == 0 else {
            throw fail(.columnsNotCanonical("a tombstone carries no columns"))
        }
        var cells: [RowState.Cell] = []
        for _ in 0..<cellCount {
            let cellName = try name()
            let cellValue = try value()
            var clock: MergeClock?
            switch try byte() {
            case 0: break
            case 1:
                let packed = try varint()
                clock = MergeClock(
                    timestamp: HLCTimestamp(packed: Int64(bitPattern: packed)),
                    origin: Replica.ID(bytes: try bytes(16))!)
            case let b: throw fail(.badPresenceByte(b))
            }
            if let previous = cells.last, !previous.name.utf8.lexicographicallyPrecedes(cellName.utf8) {
                throw fail(.columnsNotCanonical("column names not strictly ascending"))
            }
            guard !TableLookup.contains(lookup.keys, cellName), TableLookup.contains(lookup.columns, cellName) else {
                throw fail(
                    .columnsNotCanonical("column '\(cellName)' of '\(table)' is a key column or not in the header"))
            }
            cells.append(RowState.Cell(name: cellName, value: cellValue, clock: clock))
        }
        try attributes()
        changeCount += 1
        return RowState(table: table, key: key, generation: Int64(generation), cells: cells)
    }

    /// Reads the next transaction's header, or nil after the last. The previous transaction's
    /// changes must all have been read.
    public func nextTransaction() throws -> History.TransactionHeader? {
        precondition(open == nil || changesLeft == 0, "read every change before the next transaction")
        if position == chunk.count { guard try refill() else { return nil } }
        guard header.kind == .changes else { throw fail(.unexpectedRecord("a transaction outside a change bundle")) }
        hashedFrom = position
        inRecord = true
        hasherReady = false
        prefix = []
        let start = consumedBefore + position
        let origin = Replica.ID(bytes: try bytes(16))!
        guard var chain = chains[origin] else {
            throw BundleError.verification(.transactionOutsideRanges(origin: origin.description, sequence: 0))
        }
        var hasher = SHA256()
        hasher.update(data: chain.head)
        hasher.update(data: prefix)
        txHasher = hasher
        hasherReady = true
        let seq = try varint()
        guard seq <= UInt64(Int64.max) else {
            throw BundleError.record(.numberOutOfRange("sequence number"), offset: start)
        }
        let sequence = Int64(seq)
        guard sequence <= chain.last else {
            throw BundleError.verification(.transactionOutsideRanges(origin: origin.description, sequence: sequence))
        }
        guard chain.done < chain.last, sequence == chain.done + 1 else {
            throw BundleError.verification(
                .sequenceGap(origin: origin.description, expected: chain.done &+ 1, found: sequence))
        }
        let timestamp = HLCTimestamp(packed: Int64(bitPattern: try varint()))
        guard chain.timestamp < timestamp else {
            throw BundleError.verification(.clockNotIncreasing(origin: origin.description, sequence: sequence))
        }
        chain.timestamp = timestamp
        chains[origin] = chain
        let author = try optionalName()
        let context = try optionalName()
        var pid: Int32?
        switch try byte() {
        case 0: break
        case 1:
            let v = try varint()
            guard v <= UInt64(UInt32.max) else { throw fail(.numberOutOfRange("process id")) }
            pid = Int32(bitPattern: UInt32(v))
        case let b: throw fail(.badPresenceByte(b))
        }
        let count = try varint()
        guard count <= UInt64(Int32.max) else { throw fail(.lengthTooLarge(Int(Int32.max))) }
        let head = History.TransactionHeader(
            origin: origin, sequence: sequence, timestamp: timestamp, author: author, contextName: context,
            processID: pid,
            changeCount: Int(count), schemaPosition: header.schemaPosition(of: origin, sequence: sequence))
        open = head
        changesLeft = Int(count)
        if changesLeft == 0 { try closeTransaction() }
        transactionCount += 1
        return head
    }

    /// Reads the next change of the current transaction, or nil when it has no more.
    public func nextChange() throws -> History.Change? {
        guard open != nil, changesLeft > 0 else { return nil }
        let op = try byte()
        let type: History.ChangeType
        switch op {
        case 1: type = .insert
        case 2: type = .update
        case 3: type = .delete
        default: throw fail(.unknownChangeType(op))
        }
        let generation = try varint()
        // §4.3: inserts and updates belong to a living row (odd), deletes end one (even).
        guard generation >= 1, generation <= UInt64(Int64.max), (generation % 2 == 0) == (type == .delete) else {
            throw fail(.badGeneration(generation))
        }
        let table = try name()
        guard let lookup = tables.first(where: { $0.name.elementsEqual(table.utf8) }) else {
            throw fail(.columnsNotCanonical("table '\(table)' is not in the header"))
        }
        let keyCount = try varint()
        guard keyCount >= 1, keyCount <= UInt64(BundleFormat.maxColumns) else {
            throw fail(.tooManyColumns(Int(min(keyCount, 1_000_000))))
        }
        recordValueBytes = 0
        var key: [History.Column] = []
        key.reserveCapacity(Int(keyCount))
        for _ in 0..<keyCount { key.append(History.Column(try name(), try value())) }
        guard key.count == lookup.keys.count, zip(key, lookup.keys).allSatisfy({ $0.name.utf8.elementsEqual($1) })
        else {
            throw fail(.columnsNotCanonical("key columns of '\(table)' do not match its header entry"))
        }
        let columnCount = try varint()
        guard columnCount <= UInt64(BundleFormat.maxColumns) else {
            throw fail(.tooManyColumns(Int(min(columnCount, 1_000_000))))
        }
        var columns: [History.Column] = []
        columns.reserveCapacity(Int(columnCount))
        for _ in 0..<columnCount {
            let column = History.Column(try name(), try value())
            if let previous = columns.last, !previous.name.utf8.lexicographicallyPrecedes(column.name.utf8) {
                throw fail(.columnsNotCanonical("column names not strictly ascending"))
            }
            guard !TableLookup.contains(lookup.keys, column.name), TableLookup.contains(lookup.columns, column.name)
            else {
                throw fail(
                    .columnsNotCanonical("column '\(column.name)' of '\(table)' is a key column or not in the header"))
            }
            columns.append(column)
        }
        if type == .update && columns.isEmpty { throw fail(.columnsNotCanonical("an update changes no column")) }
        try attributes()
        changesLeft -= 1
        changeCount += 1
        if changesLeft == 0 { try closeTransaction() }
        switch type {
        case .insert:
            return History.Change(
                type: .insert, table: table, key: key, values: key + columns, generation: Int64(generation))
        case .update:
            return History.Change(type: .update, table: table, key: key, values: columns, generation: Int64(generation))
        case .delete:
            return History.Change(
                type: .delete, table: table, key: key, values: [], tombstone: key + columns,
                generation: Int64(generation))
        }
    }

    private func closeTransaction() throws {
        let head = open!
        try transactionAttributes(head)
        txHasher.update(data: chunk[hashedFrom..<position])
        let hash = Array(txHasher.finalize())
        chains[head.origin]!.head = hash
        chains[head.origin]!.done = head.sequence
        lastCompleted = (head, hash)
        open = nil
        inRecord = false
    }

    /// Reads every remaining record, whatever the bundle's kind, so that `finish()` can verify.
    public func skipRecords() throws {
        if header.kind == .snapshot {
            while try nextRowState() != nil {}
        } else {
            while try nextTransaction() != nil {
                while try nextChange() != nil {}
            }
        }
    }

    // MARK: - Finish

    /// Reads the attestations and the signature after the last transaction and verifies everything.
    public func finish() throws -> VerifiedBundle {
        precondition(open == nil, "read every change before finishing")
        while pending == nil {
            // Bytes left over start a record that never ends (R28).
            guard position == chunk.count else { throw fail(.truncated) }
            _ = try refill()
            if pending == nil && position < chunk.count {
                throw fail(.unexpectedRecord("records follow where the reader stopped reading them"))
            }
        }
        // Every frame's place is checked through the SIGNATURE frame before any attestation (R9, then R10).
        var frame = pending!
        var attestationFrames: [FrameReader.Frame] = []
        while frame.type == .attestation && attestationFrames.count < header.ranges.count {
            attestationFrames.append(frame)
            frame = try frames.next()
        }
        guard frame.type == .signature, attestationFrames.count == header.ranges.count else {
            throw BundleError.framing(.unexpectedFrame(frame.type.rawValue), offset: frame.offset)
        }
        guard frame.payload.count == 64 else { throw BundleError.framing(.badSignatureFrame, offset: frame.offset) }
        var attestations: [Attestation] = []
        for (range, attestationFrame) in zip(header.ranges, attestationFrames) {
            let attestation = try Attestation.decode(attestationFrame.payload, frameOffset: attestationFrame.offset)
            let chain = chains[range.origin]!
            guard attestation.origin == range.origin, attestation.sequence == range.last else {
                throw BundleError.verification(.badAttestation(origin: range.origin.description))
            }
            guard chain.done == range.last else {
                throw BundleError.verification(.rangeIncomplete(origin: range.origin.description))
            }
            guard attestation.head == chain.head else {
                throw BundleError.verification(.chainMismatch(origin: range.origin.description))
            }
            guard SigningKeyCheck.isAcceptable(range.publicKey), attestation.verifies(publicKey: range.publicKey) else {
                throw BundleError.verification(.badAttestation(origin: range.origin.description))
            }
            attestations.append(attestation)
        }
        let digest = Array(frames.fileHash.finalize())
        guard try frames.atEnd() else { throw BundleError.framing(.trailingBytes, offset: frames.offset) }
        guard SigningKeyCheck.isAcceptable(senderKey),
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: senderKey),
            key.isValidSignature(frame.payload, for: BundleFormat.bundleSignaturePrefix + digest)
        else { throw BundleError.verification(.badSignature) }
        return VerifiedBundle(
            header: header, senderKey: senderKey, attestations: attestations, digest: digest,
            transactionCount: transactionCount, changeCount: changeCount)
    }
}

/// A bundle whose framing, records, chains, attestations and signature all verified.
public struct VerifiedBundle: Sendable, Hashable {
    /// The header.
    public let header: BundleHeader
    /// The sender's public key.
    public let senderKey: [UInt8]
    /// One attestation per origin range, in header order.
    public let attestations: [Attestation]
    /// SHA-256 of the signed bytes: identifies the bundle's content.
    public let digest: [UInt8]
    /// How many transactions it holds.
    public let transactionCount: Int
    /// How many changes it holds.
    public let changeCount: Int
    /// The sender's identity.
    public var sender: Replica.ID { Replica.ID(publicKey: senderKey) }
}
