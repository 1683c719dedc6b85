extension Catalog {
    /// Long by design: the catalogue of valid vectors, one entry each, in the order of the spec.
    mutating func addValid() {
        var example = alice(1...1, tables: [World.notes])
        example.created = World.time(11)
        valid(
            "example",
            "Alice's first transaction, one insert, in an uncompressed TRANSACTIONS frame: the annotated example of §8",
            flags: ["Uncompressed"], example)

        valid(
            "alice-history",
            "Alice's transactions #1-#4 as the reference writer lays them out: insert, update, composite keys, key-only "
                + "table, deletes with and without tombstone columns, negative process id, equal milliseconds with counters",
            flags: ["Compressed"], alice(1...4, compressed: true))

        var samples = alice(5...5, tables: [World.samples], compressed: true)
        samples.created = World.time(51)
        valid(
            "all-value-kinds",
            "Every storage class: NULL, INTEGER extremes, REAL -0.0, NaN payloads, infinities, subnormal, TEXT with "
                + "NUL, controls, combining marks and astral characters, empty TEXT and BLOB; the range starts at #5 and "
                + "continues Alice's chain",
            flags: ["Compressed", "Values"], samples)

        valid(
            "relay-three-origins",
            "Carol relays Alice's #2-#4 and Bob's #1-#3 with her own #1, interleaved; three ranges and attestations",
            flags: ["Compressed", "Relay"], relay(compressed: true))

        let bob = Draft(
            world: w, sender: w.bob, created: World.time(36), since: .zero, through: Token([(w.bob, 3)]),
            tables: [World.notes],
            transactions: (1...3).map { w.tx(w.bob, $0) })
        valid(
            "bob-history", "Bob's history: a NULL column, a transaction with no changes, and a 2 kB TEXT value",
            flags: ["Compressed", "EmptyTransaction"], bob)

        var limits = Draft(
            world: w, sender: w.carol, created: World.time(41), since: Token([(w.carol, 1)]),
            through: Token([(w.carol, 2)]),
            tables: [World.wide], transactions: [w.tx(w.carol, 2)])
        limits.compressTransactions = { _ in true }
        valid(
            "limits",
            "Wide and long: a 63-column table, a change with 62 value columns, the longest author name (4096 bytes), the largest process id (2^31-1)",
            flags: ["Compressed", "Limits"], limits)

        // Frame boundaries inside records: first after each transaction's prefix (in changes, values,
        // varints and at record boundaries), then inside the prefixes themselves.
        var spanning = alice(1...3)
        let lengths = spanning.transactions.map(\.encoded.count)
        let prefixes = spanning.transactions.map(Self.prefixLength)
        let ends = [0, lengths[0], lengths[0] + lengths[1]]
        spanning.cuts = [
            prefixes[0] + 1, prefixes[0] + 9, prefixes[0] + 10, lengths[0] - 1, ends[1], ends[1] + prefixes[1] + 2,
            ends[2],
            ends[2] + prefixes[2] + 7, ends[2] + prefixes[2] + 8,
        ]
        spanning.compressTransactions = { $0 % 3 == 1 }
        valid(
            "records-span-frames",
            "The record stream split across ten TRANSACTIONS frames, some compressed and some not, at points "
                + "inside changes: in names, in values, in varints, and between records",
            flags: ["FrameSplit", "Compressed", "Uncompressed"], spanning)
        spanning.cuts = [1, 17, ends[1] + 16, ends[1] + 18, ends[2] + prefixes[2] - 1]
        valid(
            "prefix-spans-frames",
            "Frame boundaries inside transaction prefixes: in the origin id, in a sequence number and "
                + "timestamp, just before a change count",
            flags: ["FrameSplit", "Compressed", "Uncompressed"], spanning)

        var packed = alice(1...2)
        packed.compressHeader = true
        packed.compressAttestations = true
        valid(
            "compressed-header-and-attestation", "The compressed flag on the HEADER and ATTESTATION frames as well",
            flags: ["Compressed"], packed)

        var attributes = alice(1...1, tables: [World.notes])
        attributes.transactions[0].attributes = [
            Attribute(id: 1, data: Array("future".utf8)), Attribute(id: 101, data: []),
        ]
        attributes.transactions[0].changes[0].attributes = [Attribute(id: 3, data: [0xde, 0xad, 0xbe, 0xef])]
        valid(
            "odd-attributes-skipped",
            "Unknown odd attribute ids on a transaction and a change are skipped; the chain hash covers them",
            flags: ["Extensibility"], attributes)

        let everything = Token([(w.alice, 4), (w.bob, 3), (w.carol, 1)])
        valid(
            "no-transactions",
            "A changes bundle with nothing new: no tables, no ranges, no TRANSACTIONS or ATTESTATION frames",
            flags: ["Empty"],
            Draft(
                world: w, sender: w.bob, created: World.time(80), since: everything, through: everything, tables: [],
                transactions: []))

        valid(
            "watermark", "A watermark (kind 3): Bob states the token he has applied",
            flags: ["Watermark"],
            Draft(
                world: w, sender: w.bob, kind: 3, created: World.time(81), since: everything, through: everything,
                tables: [World.notes, World.tags, World.labels], transactions: []))
        var digested = Draft(
            world: w, sender: w.bob, kind: 3, created: World.time(82), since: everything, through: everything,
            tables: [World.notes, World.tags, World.labels], transactions: [])
        digested.rowDigest = [("notes", 3, 0x0123_4567_89ab_cdef), ("tags", 1, 0xfedc_ba98_7654_3210)]
        valid(
            "watermark-with-row-digest",
            "A watermark whose header carries Bob's row digest: 3 notes and 1 tag, each table's sum of row hashes",
            flags: ["Watermark"], digested)

        var maxSequence = Draft(
            world: w, sender: w.alice, created: World.time(90), since: Token(entries: [(w.alice.id, Int64.max - 1)]),
            through: Token(entries: [(w.alice.id, Int64.max)]), tables: [World.notes], transactions: [])
        var last = w.tx(w.alice, 2)
        last.sequence = .max
        maxSequence.transactions = [last]
        maxSequence.ranges = [
            OriginRange(
                publicKey: w.alice.publicKey, first: .max, last: .max,
                previous: Wire.sha256(Array("an earlier head".utf8)))
        ]
        valid(
            "sequence-max",
            "A transaction with the largest sequence number, 2^63-1, continuing an arbitrary earlier head",
            flags: ["Limits"], maxSequence)
    }
}
