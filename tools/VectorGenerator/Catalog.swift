/// One test vector: a bundle file and what a reader must make of it.
struct Vector {
    enum Result {
        /// The bundle verifies and decodes to this JSON.
        case valid(JSON)
        /// The bundle must be rejected; `error` names the rule of Protocol/bundle.md §7 it breaks.
        case invalid(error: String)
    }

    /// The manifest test group (one per section of Protocol/bundle.md §7).
    var group: String
    /// The file name without extension; for invalid vectors, the defect.
    var name: String
    var comment: String
    var flags: [String]
    var file: [UInt8]
    var result: Result

    var isValid: Bool {
        if case .valid = result { return true }
        return false
    }
}

/// Builds every vector. The groups live in `Catalog+*.swift`.
struct Catalog {
    let w = World()
    private(set) var vectors: [Vector] = []
    /// The group the `add*` method running now fills.
    var group = "valid"

    init() {
        group = "valid"
        addValid()
        group = "framing"
        addFraming()
        group = "compression"
        addCompression()
        group = "header"
        addHeader()
        group = "records"
        addRecords()
        group = "verification"
        addVerification()
        group = "snapshot"
        addSnapshot()
        group = "record-limit"
        addRecordLimit()
        group = "schema"
        addSchema()
        group = "generation-floors"
        addGenerationFloors()
        let names = vectors.map(\.name)
        precondition(Set(names).count == names.count, "duplicate vector names")
    }

    // MARK: - Adding

    mutating func valid(_ name: String, _ comment: String, flags: [String] = [], _ draft: Draft) {
        let built = draft.build(world: w)
        vectors.append(
            Vector(
                group: group, name: name, comment: comment, flags: flags, file: built.file,
                result: .valid(draft.expectedJSON(built))))
    }

    /// An invalid vector built from a draft: every stage after the draft's hooks is consistent, so the
    /// defect the hooks introduce is the only one.
    mutating func invalid(_ name: String, _ comment: String, flags: [String], error: String, _ draft: Draft) {
        vectors.append(
            Vector(
                group: group, name: name, comment: comment, flags: flags, file: draft.build(world: w).file,
                result: .invalid(error: error)))
    }

    /// An invalid vector given as bytes.
    mutating func invalid(_ name: String, _ comment: String, flags: [String], error: String, bytes: [UInt8]) {
        vectors.append(
            Vector(
                group: group, name: name, comment: comment, flags: flags, file: bytes, result: .invalid(error: error)))
    }

    // MARK: - Base drafts

    /// Alice sends her own transactions `sequences`.
    func alice(_ sequences: ClosedRange<Int64> = 1...3, tables: [Table]? = nil, compressed: Bool = false) -> Draft {
        let since = Token([(w.alice, sequences.lowerBound - 1)])
        var d = Draft(
            world: w, sender: w.alice, created: World.time(60), since: since,
            through: Token([(w.alice, sequences.upperBound)]),
            tables: tables ?? [World.notes, World.tags, World.labels], transactions: sequences.map { w.tx(w.alice, $0) }
        )
        d.compressTransactions = { _ in compressed }
        return d
    }

    /// Carol relays Alice's #2…#4 and Bob's #1…#3 with her own #1, interleaved as she applied them.
    func relay(compressed: Bool = true) -> Draft {
        let order: [(Identity, Int64)] = [
            (w.bob, 1), (w.alice, 2), (w.carol, 1), (w.alice, 3), (w.bob, 2), (w.alice, 4), (w.bob, 3),
        ]
        var d = Draft(
            world: w, sender: w.carol, created: World.time(70), since: Token([(w.alice, 1)]),
            through: Token([(w.alice, 4), (w.bob, 3), (w.carol, 1)]), tables: [World.notes, World.tags, World.labels],
            transactions: order.map { w.tx($0.0, $0.1) })
        d.compressTransactions = { _ in compressed }
        return d
    }

    /// The index of Alice's range in a draft's ranges.
    func rangeIndex(_ d: Draft, _ who: Identity) -> Int { d.ranges.firstIndex { $0.origin == who.id }! }

    /// A genuine attestation `who` made of its chain after `sequence`.
    func genuineAttestation(_ who: Identity, _ sequence: Int64) -> AttestationRecord {
        let head = w.head(who, through: sequence)
        return AttestationRecord(
            origin: who.id, sequence: sequence, head: head,
            signature: who.sign(Wire.attestationMessage(origin: who.id, sequence: sequence, head: head)))
    }

    /// The byte offset of a transaction record's author presence byte.
    static func authorOffset(_ t: Transaction) -> Int {
        16 + Wire.varint(UInt64(t.sequence)).count + Wire.varint(UInt64(bitPattern: t.timestamp)).count
    }

    /// The length of a transaction record's prefix: origin through change count (§4.2).
    static func prefixLength(_ t: Transaction) -> Int {
        var n = authorOffset(t) + Wire.optionalName(t.author).count + Wire.optionalName(t.contextName).count
        n += t.processID.map { 1 + Wire.varint(UInt64(UInt32(bitPattern: $0))).count } ?? 1
        return n + Wire.varint(UInt64(t.changes.count)).count
    }

    /// A column as encoded in a change: its name, then its value.
    static func column(_ name: String, _ value: Value) -> [UInt8] { Wire.name(name) + Wire.value(value) }
}
