/// Everything that goes into one bundle, and the hooks that let a defect vector change any stage.
///
/// `build()` runs the stages in the order a real writer does: header payload, transaction records,
/// chain heads and attestations over the records, frames, the file signature. A hook placed before a
/// stage is *followed* by the later stages (an edited record is chained, attested and signed, so only
/// the intended defect remains); a hook placed after a stage is not (a relay's tampering, a bit flip).
struct Draft {
    var sender: Identity
    var kind: UInt8 = 1
    var senderName: String
    var created: Int64
    var since: Token
    var through: Token
    var tables: [Table]
    var transactions: [Transaction]
    /// The row states of a snapshot (kind 2, §4.4), written after any transactions.
    var rowStates: [RowStateRecord] = []
    var ranges: [OriginRange]
    /// The header's attribute count and anything after it; when `schemaChanges` is not empty, the
    /// schema lineage attribute (Protocol/schema.md §4) is written instead.
    var headerTail: [UInt8] = [0]
    /// The encoded changes of schema versions 1, 2, … of the lineage attribute.
    var schemaChanges: [[UInt8]] = []
    /// The lineage attribute's runs: (range index, first sequence, position).
    var schemaRuns: [(range: Int, first: Int64, position: Int)] = []
    /// A watermark's row digest attribute (Protocol/exchange.md §8.3), entries written in the order
    /// given; when set, it is written instead of `headerTail`.
    var rowDigest: [(name: String, rows: UInt64, sum: UInt64)]?
    /// A snapshot's generation floors attribute (§3.3, attribute 4), entries written in the order
    /// given; when set, it is written instead of `headerTail`.
    var floors: [(name: String, floor: UInt64)]?
    /// Writes the header's attributes in descending order of id, as no writer may.
    var attributesReversed = false

    /// Offsets in the record stream where a new TRANSACTIONS frame starts (the first starts at 0).
    var cuts: [Int] = []
    /// Whether TRANSACTIONS frame `i` is compressed.
    var compressTransactions: (Int) -> Bool = { _ in true }
    var compressHeader = false
    var compressAttestations = false

    // Hooks, in pipeline order.
    var editPreamble: (inout [UInt8]) -> Void = { _ in }
    var editHeader: (inout [UInt8]) -> Void = { _ in }
    /// Per-transaction record bytes; chains, attestations and the signature follow the edit.
    var editRecords: (inout [[UInt8]]) -> Void = { _ in }
    /// After the chains: attestations as computed (signed by each origin's key).
    var editAttestations: (inout [AttestationRecord]) -> Void = { _ in }
    /// After the chains: the record stream as framed (a relay's tampering; the chains do not follow).
    var tamperStream: (inout [UInt8]) -> Void = { _ in }
    /// The frames before the signature; the file signature follows.
    var editFrames: (inout [Frame]) -> Void = { _ in }
    /// Who signs the file (default: the sender).
    var signer: Identity?
    /// The finished file, signature included (nothing follows).
    var editFile: (inout [UInt8]) -> Void = { _ in }

    /// A draft whose ranges follow from `transactions` and the world's histories.
    init(
        world: World, sender: Identity, kind: UInt8 = 1, created: Int64, since: Token = .zero, through: Token,
        tables: [Table], transactions: [Transaction]
    ) {
        self.sender = sender
        self.kind = kind
        self.senderName = sender.name
        self.created = created
        self.since = since
        self.through = through
        self.tables = tables
        self.transactions = transactions
        var byOrigin: [[UInt8]: (Identity, Int64, Int64)] = [:]
        for t in transactions {
            let prior = byOrigin[t.origin.id]
            byOrigin[t.origin.id] = (
                t.origin, min(prior?.1 ?? t.sequence, t.sequence), max(prior?.2 ?? t.sequence, t.sequence)
            )
        }
        ranges = byOrigin.values.map { origin, first, last in
            OriginRange(
                publicKey: origin.publicKey, first: first, last: last, previous: world.head(origin, through: first - 1))
        }.sorted { $0.origin.lexicographicallyPrecedes($1.origin) }
    }

    /// The result of a build, with what the expected JSON needs.
    struct Built {
        var file: [UInt8]
        var headerPayload: [UInt8]
        var records: [[UInt8]]
        /// The chain hash after each record (nil when the record names no known range).
        var chainHashes: [[UInt8]?]
        var attestations: [AttestationRecord]
        /// SHA-256 of the signed bytes.
        var digest: [UInt8]
        var signature: [UInt8]
    }

    func headerPayload() -> [UInt8] {
        var out = [kind] + Wire.name(senderName) + Wire.varint(UInt64(bitPattern: created))
        out += Wire.token(since) + Wire.token(through)
        out += Wire.varint(UInt64(tables.count))
        for t in tables { out += t.encoded }
        out += Wire.varint(UInt64(ranges.count))
        for r in ranges { out += r.encoded }
        var attributes: [(id: UInt64, data: [UInt8])] = []
        if !schemaChanges.isEmpty {
            var data =
                Wire.varint(UInt64(schemaChanges.count)) + schemaChanges.flatMap { $0 }
                + Wire.varint(UInt64(schemaRuns.count))
            for run in schemaRuns {
                data +=
                    Wire.varint(UInt64(run.range)) + Wire.varint(UInt64(run.first)) + Wire.varint(UInt64(run.position))
            }
            attributes.append((2, data))
        }
        if let rowDigest {
            var data = Wire.varint(UInt64(rowDigest.count))
            for entry in rowDigest { data += Wire.name(entry.name) + Wire.varint(entry.rows) + Wire.be64(entry.sum) }
            attributes.append((3, data))
        }
        if let floors {
            var data = Wire.varint(UInt64(floors.count))
            for entry in floors { data += Wire.name(entry.name) + Wire.varint(entry.floor) }
            attributes.append((4, data))
        }
        guard !attributes.isEmpty else { return out + headerTail }
        if attributesReversed { attributes.reverse() }
        out += Wire.varint(UInt64(attributes.count))
        for attribute in attributes { out += Wire.varint(attribute.id) + Wire.bytes(attribute.data) }
        return out
    }

    /// Schema.md §2: the ids of the lineage's versions.
    var schemaIDs: [[UInt8]] {
        var ids: [[UInt8]] = []
        for change in schemaChanges {
            ids.append(
                Wire.sha256(
                    Array("tidemark-schema-v1".utf8) + [0] + (ids.last ?? [UInt8](repeating: 0, count: 32)) + change))
        }
        return ids
    }

    /// The schema version id transaction `t` is written under by the runs, nil for the initial schema.
    func schemaID(of t: Transaction) -> [UInt8]? {
        guard let range = ranges.firstIndex(where: { $0.origin == t.origin.id }),
            let run = schemaRuns.last(where: { $0.range == range && $0.first <= t.sequence })
        else { return nil }
        return schemaIDs[run.position - 1]
    }

    /// Long by design: it writes a bundle in file order, each edit hook at the point of the file it changes.
    func build(world: World) -> Built {
        var header = headerPayload()
        editHeader(&header)

        var records = transactions.map(\.encoded) + rowStates.map(\.encoded)
        editRecords(&records)

        // §5.2: chain each origin's records from its range's `previous`.
        var heads: [[UInt8]: [UInt8]] = [:]
        for r in ranges { heads[r.origin] = r.previous }
        var chainHashes: [[UInt8]?] = []
        for record in records {
            let origin = Array(record.prefix(16))
            guard let previous = heads[origin] else {
                chainHashes.append(nil)
                continue
            }
            let next = Wire.sha256(previous + record)
            heads[origin] = next
            chainHashes.append(next)
        }
        var attestations = ranges.map { r -> AttestationRecord in
            let head = heads[r.origin]!
            let signer = world.identity(id: r.origin)
            let signature =
                signer?.sign(Wire.attestationMessage(origin: r.origin, sequence: r.last, head: head))
                ?? [UInt8](repeating: 0, count: 64)
            return AttestationRecord(origin: r.origin, sequence: r.last, head: head, signature: signature)
        }
        editAttestations(&attestations)

        var stream = records.flatMap { $0 }
        tamperStream(&stream)

        var frames = [
            Frame(
                type: Frame.header, flags: compressHeader ? 1 : 0,
                body: compressHeader ? Self.compressed(header) : header)
        ]
        let starts = ([0] + cuts.filter { $0 > 0 && $0 < stream.count }).sorted()
        if !stream.isEmpty {
            for (i, start) in starts.enumerated() {
                let end = i + 1 < starts.count ? starts[i + 1] : stream.count
                let chunk = Array(stream[start..<end])
                let compress = compressTransactions(i)
                frames.append(
                    Frame(
                        type: Frame.transactions, flags: compress ? 1 : 0,
                        body: compress ? Self.compressed(chunk) : chunk))
            }
        }
        for a in attestations {
            frames.append(
                Frame(
                    type: Frame.attestation, flags: compressAttestations ? 1 : 0,
                    body: compressAttestations ? Self.compressed(a.encoded) : a.encoded))
        }
        editFrames(&frames)

        var file = [0x89, 0x54, 0x4D, 0x42, 0x0D, 0x0A, 0x1A, 0x0A] + Wire.be16(1) + Wire.be16(0) + sender.publicKey
        editPreamble(&file)
        for f in frames { file += f.encoded }
        let digest = Wire.sha256(file)
        let signature = (signer ?? sender).sign(Wire.bundlePrefix + digest)
        file += Wire.frame(type: Frame.signature, flags: 0, body: signature)
        editFile(&file)
        return Built(
            file: file, headerPayload: header, records: records, chainHashes: chainHashes, attestations: attestations,
            digest: digest,
            signature: signature)
    }

    /// §3.2: a compressed payload: 4-byte big-endian raw length, then raw DEFLATE.
    static func compressed(_ raw: [UInt8]) -> [UInt8] { Wire.be32(UInt32(raw.count)) + Zlib.deflate(raw) }
}
