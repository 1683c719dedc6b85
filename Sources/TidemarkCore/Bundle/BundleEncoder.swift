import Crypto

/// Writes a bundle in one streaming pass (§3): preamble and header, transactions in chunks of
/// about 1 MiB compressed as they fill, one attestation per origin range, and the sender's
/// signature. Memory stays bounded by the chunk size and the largest record (64 MiB of values).
///
/// Content the format cannot carry is refused with a thrown `BundleWriteError`; misuse of the
/// call sequence (changes outside the header's ranges, a transaction left open) is a programming
/// error and traps.
public struct BundleEncoder<Sink: ByteSink> {
    private var sink: Sink
    private let signingKey: Curve25519.Signing.PrivateKey
    private let header: BundleHeader
    private var fileHash = SHA256()
    private var buffer: [UInt8] = []
    private var compressionLevel: Int32

    // Chain state per origin: the running head and the next expected sequence number.
    private var heads: [Replica.ID: [UInt8]] = [:]
    private var next: [Replica.ID: Int64] = [:]
    private var txHasher: SHA256?
    private var txOrigin: Replica.ID?
    private var txSequence: Int64 = 0
    private var txSchema: [UInt8]?
    private var hashedFrom = 0
    private var changesLeft = 0

    /// The chain head computed for each origin so far.
    public var chainHeads: [Replica.ID: [UInt8]] { heads }

    /// Starts a bundle: writes the preamble and the header frame.
    public init(
        sink: Sink, signingKey: Curve25519.Signing.PrivateKey, header: BundleHeader, compressionLevel: Int32 = 6
    ) throws {
        self.sink = sink
        self.signingKey = signingKey
        self.header = header
        self.compressionLevel = compressionLevel
        for range in header.ranges {
            heads[range.origin] = range.previous
            next[range.origin] = range.first
        }
        let preamble =
            BundleFormat.magic + [UInt8(BundleFormat.version >> 8), UInt8(BundleFormat.version & 0xff), 0, 0]
            + Array(signingKey.publicKey.rawRepresentation)
        try emit(preamble)
        try writeFrame(.header, payload: header.encoded(), compress: false)
    }

    /// Begins a transaction; exactly `changeCount` calls to `add(_:)` must follow. The schema
    /// version it is recorded under is the one the header's schema runs place it under.
    public mutating func beginTransaction(
        origin: Replica.ID, sequence: Int64, timestamp: HLCTimestamp, author: String?, contextName: String?,
        processID: Int32?, changeCount: Int
    ) throws {
        precondition(txOrigin == nil, "beginTransaction while a transaction is open")
        precondition(header.kind == .changes, "transactions belong in change bundles")
        guard let expected = next[origin], expected == sequence else {
            preconditionFailure("transaction \(origin.short) #\(sequence) is outside the header's ranges")
        }
        for (field, name) in [("author", author), ("context name", contextName)] {
            guard let bytes = name?.utf8.count, bytes == 0 || bytes > BundleFormat.maxNameLength else { continue }
            throw BundleWriteError.nameOutOfRange(origin: origin, sequence: sequence, field: field, bytes: bytes)
        }
        var hasher = SHA256()
        hasher.update(data: heads[origin]!)
        txHasher = hasher
        txOrigin = origin
        txSequence = sequence
        let position = header.schemaPosition(of: origin, sequence: sequence)
        txSchema = position == 0 ? nil : header.lineage[position - 1].id
        hashedFrom = buffer.count
        changesLeft = changeCount
        RecordEncoding.transactionPrefix(
            origin: origin, sequence: sequence, timestamp: timestamp, author: author, contextName: contextName,
            processID: processID, changeCount: changeCount, &buffer)
        if changeCount == 0 { try endTransaction() }
    }

    /// Adds the next change of the open transaction.
    ///
    /// Throws `BundleWriteError.recordTooLarge`, before encoding anything of the change, if its
    /// TEXT and BLOB values, key values included, exceed `BundleFormat.maxRecordValueBytes`
    /// (§4.1, R36): every reader would reject the bundle. The encoder is then unusable.
    public mutating func add(_ change: History.Change) throws {
        precondition(changesLeft > 0, "more changes than announced")
        let valueBytes = RecordEncoding.valueBytes(change)
        guard valueBytes <= BundleFormat.maxRecordValueBytes else {
            throw BundleWriteError.recordTooLarge(table: change.table, key: change.key, bytes: valueBytes)
        }
        RecordEncoding.change(change, &buffer)
        changesLeft -= 1
        if changesLeft == 0 {
            try endTransaction()
        } else if buffer.count >= BundleFormat.chunkTarget {
            try flushChunk()
        }
    }

    /// Adds one row state to a snapshot bundle (§4.4).
    ///
    /// Throws `BundleWriteError.recordTooLarge`, before encoding anything of the row state, if its
    /// TEXT and BLOB values, key values included, exceed `BundleFormat.maxRecordValueBytes`
    /// (§4.1, R36). The encoder is then unusable.
    public mutating func add(_ state: RowState) throws {
        precondition(header.kind == .snapshot, "row states belong in snapshot bundles")
        let valueBytes = RecordEncoding.valueBytes(state)
        guard valueBytes <= BundleFormat.maxRecordValueBytes else {
            throw BundleWriteError.recordTooLarge(table: state.table, key: state.key, bytes: valueBytes)
        }
        RecordEncoding.rowState(state, &buffer)
        if buffer.count >= BundleFormat.chunkTarget { try flushChunk() }
    }

    private mutating func endTransaction() throws {
        RecordEncoding.transactionAttributes(schema: txSchema, &buffer)
        txHasher!.update(data: buffer[hashedFrom...])
        let origin = txOrigin!
        heads[origin] = Array(txHasher!.finalize())
        next[origin] = txSequence &+ 1
        txHasher = nil
        txOrigin = nil
        if buffer.count >= BundleFormat.chunkTarget { try flushChunk() }
    }

    private mutating func flushChunk() throws {
        guard !buffer.isEmpty else { return }
        if txHasher != nil { txHasher!.update(data: buffer[hashedFrom...]) }
        var start = 0
        while start < buffer.count {
            let end = min(buffer.count, start + BundleFormat.chunkTarget)
            try writeFrame(.transactions, payload: Array(buffer[start..<end]), compress: true)
            start = end
        }
        buffer.removeAll(keepingCapacity: true)
        hashedFrom = 0
    }

    /// Ends the bundle: flushes, writes the attestations (`attest` supplies each origin's signed
    /// head; the encoder checks it matches the head it computed) and the signature. Returns the sink.
    public mutating func finish(attest: (Replica.ID, Int64, [UInt8]) throws -> Attestation) throws -> Sink {
        precondition(txOrigin == nil, "finish with a transaction open")
        try flushChunk()
        for range in header.ranges {
            precondition(next[range.origin] == range.last &+ 1, "origin range \(range.origin.short) not complete")
            let head = heads[range.origin]!
            let attestation = try attest(range.origin, range.last, head)
            precondition(
                attestation.head == head && attestation.sequence == range.last, "attestation does not match the chain")
            try writeFrame(.attestation, payload: attestation.encoded(), compress: false)
        }
        let digest = Array(fileHash.finalize())
        let signature = try signingKey.signature(for: BundleFormat.bundleSignaturePrefix + digest)
        var frame: [UInt8] = [BundleFormat.FrameType.signature.rawValue, 0, 0, 0, 0, 64]
        frame += Array(signature)
        try sink.write(frame)
        return sink
    }

    private mutating func writeFrame(_ type: BundleFormat.FrameType, payload: [UInt8], compress: Bool) throws {
        var body = payload
        var flags: UInt8 = 0
        if compress {
            let count = UInt32(payload.count)
            body =
                [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
                + Deflate.compress(payload, level: compressionLevel)
            flags = BundleFormat.compressedFlag
        }
        let n = UInt32(body.count)
        let head: [UInt8] = [
            type.rawValue, flags, UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff),
        ]
        try emit(head)
        try emit(body)
    }

    private mutating func emit(_ bytes: [UInt8]) throws {
        fileHash.update(data: bytes)
        try sink.write(bytes)
    }
}
