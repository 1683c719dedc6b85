import Crypto
import Foundation
import Testing
import TidemarkCore

/// `BundleEncoder` and `BundleDecoder` together: random content round-trips exactly, and damage to
/// a small bundle (any truncation, any single bit flipped) is refused with a `BundleError`.
@Suite struct BundleCodecTests {
    @Test func randomTransactionsRoundTrip() throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        print("BundleCodecTests.randomTransactionsRoundTrip seed: \(seed)")
        var rng = SplitMix64(seed: seed)
        let fixture = Fixture(origins: 3)
        for round in 0..<20 {
            let transactions = fixture.randomTransactions(count: Int.random(in: 0...12, using: &rng), using: &rng)
            let file = try fixture.encode(transactions)
            let decoded = try Fixture.decode(file)
            #expect(decoded.count == transactions.count, "seed \(seed) round \(round)")
            for (expected, actual) in zip(transactions, decoded) {
                #expect(actual.head == expected.head, "seed \(seed) round \(round)")
                #expect(
                    actual.changes == expected.changes,
                    "seed \(seed) round \(round) transaction \(expected.head.sequence)")
            }
        }
    }

    @Test func extremeValuesRoundTripBitForBit() throws {
        let fixture = Fixture(origins: 1)
        let values: [SQLValue] = [
            .null, .integer(0), .integer(-1), .integer(.min), .integer(.max), .real(0.0), .real(-0.0), .real(.nan),
            .real(Double(bitPattern: 0x7ff0_0000_0000_0001)), .real(Double(bitPattern: 0xfff8_dead_beef_0001)),
            .real(.infinity),
            .real(-.infinity), .real(.leastNonzeroMagnitude), .real(-.greatestFiniteMagnitude), .text(""),
            .text("\u{0}"),
            .text("Grüße, 世界 🌊 e\u{301}"), .blob([]), .blob([0, 0xff]),
        ]
        let columns = values.enumerated().map { History.Column(String(format: "c%02d", $0.offset), $0.element) }
        let change = History.Change(
            type: .insert, table: "t", key: [History.Column("k", .integer(1))],
            values: [History.Column("k", .integer(1))] + columns,
            generation: 1)
        let transaction = fixture.transaction(origin: 0, sequence: 1, changes: [change])
        let decoded = try Fixture.decode(try fixture.encode([transaction], extraColumns: columns.map(\.name)))
        let values2 = try #require(decoded.first?.changes.first?.values)
        #expect(values2.count == columns.count + 1)
        for (a, b) in zip(values2.dropFirst(), columns) {
            #expect(a.name == b.name)
            if case .real(let x) = a.value, case .real(let y) = b.value {
                #expect(x.bitPattern == y.bitPattern, "\(a.name)")
            } else {
                #expect(a.value == b.value, "\(a.name)")
            }
        }
    }

    /// The encoder cuts its record buffer into 1 MiB frames wherever the cut falls; a cut inside a
    /// transaction's prefix (origin id through change count) must still decode and verify (§3.2:
    /// records may span frames at any byte).
    @Test func aTransactionPrefixCutByTheEncodersChunkBoundaryDecodes() throws {
        let fixture = Fixture(origins: 1)
        // Transaction #1 carries one BLOB sized so that its record ends 5 bytes before 1 MiB; the
        // encoder then starts #2 there and cuts the buffer at 1 MiB, inside #2's origin id.
        let target = 1 << 20
        var blobSize = target - 5
        for _ in 0..<3 {
            let record = fixture.recordLength(blobSize: blobSize)
            blobSize += (target - 5) - record
        }
        #expect(fixture.recordLength(blobSize: blobSize) == target - 5)
        let big = History.Change(
            type: .insert, table: "t", key: [History.Column("k", .integer(1))],
            values: [
                History.Column("k", .integer(1)), History.Column("a", .blob([UInt8](repeating: 7, count: blobSize))),
            ], generation: 1)
        let small = History.Change(
            type: .update, table: "t", key: [History.Column("k", .integer(1))],
            values: [History.Column("a", .integer(2))], generation: 1)
        let transactions = [
            fixture.transaction(origin: 0, sequence: 1, changes: [big]),
            fixture.transaction(origin: 0, sequence: 2, changes: [small]),
        ]
        let file = try fixture.encode(transactions)
        #expect(throws: Never.self) { _ = try Fixture.decode(file) }
    }

    @Test func namesCutByTheChunkBoundaryAreTheNamesTheyWereBefore() throws {
        let fixture = Fixture(origins: 1)
        // Transaction #1 ends `d` bytes before 1 MiB, so that the cut falls, for one `d` or another,
        // after the length of each name of #2: the table, its key column and its other column,
        // which #1 used first. Each must still be the header's table, key and column.
        let target = 1 << 20
        for d in 1...64 {
            var blobSize = target - d
            for _ in 0..<3 { blobSize += (target - d) - fixture.recordLength(blobSize: blobSize) }
            guard fixture.recordLength(blobSize: blobSize) == target - d else { continue }
            let key = [History.Column("k", .integer(1))]
            let transactions = [
                fixture.transaction(
                    origin: 0, sequence: 1,
                    changes: [
                        History.Change(
                            type: .insert, table: "t", key: key,
                            values: key + [History.Column("a", .blob([UInt8](repeating: 7, count: blobSize)))],
                            generation: 1)
                    ]),
                fixture.transaction(
                    origin: 0, sequence: 2,
                    changes: [
                        History.Change(
                            type: .update, table: "t", key: key, values: [History.Column("a", .integer(2))],
                            generation: 1)
                    ]),
            ]
            let decoded = try Fixture.decode(try fixture.encode(transactions))
            #expect(decoded.map(\.changes) == transactions.map(\.changes), "cut \(d) bytes before 1 MiB")
        }
    }

    @Test func namesPastThoseTheDecoderRemembersDecodeTheSame() throws {
        // The decoder remembers the first 4,096 distinct names; later ones are compared with the
        // header each time they are read. Changes mixing both kinds must decode as written.
        let fixture = Fixture(origins: 1)
        let extra = (0..<5_000).map { "c\($0)" }
        let key = [History.Column("k", .integer(1))]
        let all = extra.enumerated().map { History.Column($1, .integer(Int64($0))) }
        let some = ["c1", "c4999", "c2500", "c4095", "c4096"].map { History.Column($0, .text($0)) }
        let transactions = [
            fixture.transaction(
                origin: 0, sequence: 1,
                changes: [History.Change(type: .insert, table: "t", key: key, values: key + all, generation: 1)]),
            fixture.transaction(
                origin: 0, sequence: 2,
                changes: [
                    History.Change(type: .update, table: "t", key: key, values: some, generation: 1),
                    History.Change(
                        type: .delete, table: "t", key: key, values: [], tombstone: key + some.reversed(),
                        generation: 2),
                ]),
        ]
        let decoded = try Fixture.decode(try fixture.encode(transactions, extraColumns: extra))
        #expect(decoded.map(\.changes.count) == [1, 2])
        #expect(decoded[0].changes[0].values.count == 5_001)
        #expect(Set(decoded[1].changes[0].values.map(\.name)) == Set(some.map(\.name)))
        #expect(Set(decoded[1].changes[1].tombstone!.map(\.name)) == Set(["k"] + some.map(\.name)))
    }

    @Test func truncationAtEveryByteIsRefused() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let file = try Fixture(origins: 2).smallBundle()
            var problems: [String] = []
            for length in 0..<file.count {
                if let problem = Fixture.refusal(Array(file.prefix(length))) {
                    problems.append("cut at \(length): \(problem)")
                }
            }
            if !problems.isEmpty {
                FileHandle.standardError.write(Data(problems.joined(separator: "\n").utf8))
                exit(1)
            }
        }
    }

    @Test func everySingleBitFlipIsRefused() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let file = try Fixture(origins: 2).smallBundle()
            var problems: [String] = []
            for bit in 0..<file.count * 8 {
                var damaged = file
                damaged[bit / 8] ^= 1 << UInt8(bit % 8)
                if let problem = Fixture.refusal(damaged) {
                    problems.append("bit \(bit % 8) of byte \(bit / 8): \(problem)")
                }
            }
            if !problems.isEmpty {
                FileHandle.standardError.write(Data(problems.joined(separator: "\n").utf8))
                exit(1)
            }
        }
    }
}

/// Keys, a table and helpers to write and read bundles.
private struct Fixture {
    let keys: [Curve25519.Signing.PrivateKey]
    let sender: Curve25519.Signing.PrivateKey
    static let table = "t"
    static let columns = ["a", "b", "c", "d", "e", "k"]

    init(origins: Int) {
        keys = (0..<origins).map { i in
            try! Curve25519.Signing.PrivateKey(
                rawRepresentation: Array(SHA256.hash(data: Array("codec-test-\(i)".utf8))))
        }
        sender = keys[0]
    }

    func id(_ origin: Int) -> Replica.ID { Replica.ID(publicKey: Array(keys[origin].publicKey.rawRepresentation)) }

    /// A transaction's fields as `History.TransactionHeader` carries them.
    struct Head: Equatable {
        var origin: Replica.ID
        var sequence: Int64
        var timestamp: HLCTimestamp
        var author: String?
        var contextName: String?
        var processID: Int32?
        var changeCount: Int

        init(
            origin: Replica.ID, sequence: Int64, timestamp: HLCTimestamp, author: String?, contextName: String?,
            processID: Int32?,
            changeCount: Int
        ) {
            self.origin = origin
            self.sequence = sequence
            self.timestamp = timestamp
            self.author = author
            self.contextName = contextName
            self.processID = processID
            self.changeCount = changeCount
        }

        init(_ h: History.TransactionHeader) {
            self.init(
                origin: h.origin, sequence: h.sequence, timestamp: h.timestamp, author: h.author,
                contextName: h.contextName,
                processID: h.processID, changeCount: h.changeCount)
        }
    }

    struct Transaction {
        var head: Head
        var changes: [History.Change]
    }

    func transaction(origin: Int, sequence: Int64, changes: [History.Change]) -> Transaction {
        Transaction(
            head: Head(
                origin: id(origin), sequence: sequence,
                timestamp: HLCTimestamp(milliseconds: 1_763_683_200_000 + sequence * 10, counter: 3),
                author: sequence % 2 == 0 ? nil : "author \(sequence)", contextName: sequence % 3 == 0 ? "ctx" : nil,
                processID: sequence % 4 == 0 ? nil : Int32(truncatingIfNeeded: sequence * 7919 - 100_000),
                changeCount: changes.count),
            changes: changes)
    }

    /// Transactions of every origin, interleaved, each origin numbered from 1.
    func randomTransactions(count: Int, using rng: inout SplitMix64) -> [Transaction] {
        var next = [Int64](repeating: 1, count: keys.count)
        return (0..<count).map { _ in
            let origin = Int.random(in: 0..<keys.count, using: &rng)
            defer { next[origin] += 1 }
            return transaction(
                origin: origin, sequence: next[origin],
                changes: (0..<Int.random(in: 0...5, using: &rng)).map { _ in randomChange(using: &rng) })
        }
    }

    func randomChange(using rng: inout SplitMix64) -> History.Change {
        let key = [History.Column("k", randomValue(using: &rng))]
        let names = Self.columns.filter { $0 != "k" && Bool.random(using: &rng) }
        let columns = names.map { History.Column($0, randomValue(using: &rng)) }
        let life = Int64.random(in: 0...1000, using: &rng)
        switch Int.random(in: 0..<3, using: &rng) {
        case 0:
            return History.Change(
                type: .insert, table: Self.table, key: key, values: key + columns, generation: 2 * life + 1)
        case 1:
            let updated = columns.isEmpty ? [History.Column("a", .null)] : columns
            return History.Change(type: .update, table: Self.table, key: key, values: updated, generation: 2 * life + 1)
        default:
            return History.Change(
                type: .delete, table: Self.table, key: key, values: [], tombstone: key + columns,
                generation: 2 * life + 2)
        }
    }

    func randomValue(using rng: inout SplitMix64) -> SQLValue {
        switch Int.random(in: 0..<12, using: &rng) {
        case 0: return .null
        case 1: return .integer([Int64.min, .max, 0, -1, 1][Int.random(in: 0..<5, using: &rng)])
        case 2: return .integer(Int64(bitPattern: rng.next()))
        case 3:
            return .real(
                [0.0, -0.0, .nan, .infinity, -.infinity, .leastNonzeroMagnitude][Int.random(in: 0..<6, using: &rng)])
        case 4: return .real(Double(bitPattern: rng.next()))
        case 5: return .text("")
        case 6:
            let alphabet = "aé世🌊\u{301}\u{0}\n\""
            return .text(
                String((0..<Int.random(in: 1...20, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }))
        case 7: return .blob([])
        case 8:
            return .blob((0..<Int.random(in: 1...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 9: return .text(String(repeating: "x", count: Int.random(in: 100...3000, using: &rng)))
        default: return .integer(Int64.random(in: -300...300, using: &rng))
        }
    }

    func header(for transactions: [Transaction], extraColumns: [String]) -> BundleHeader {
        var ranges: [Int: (Int64, Int64)] = [:]
        for t in transactions {
            let i = keys.firstIndex { Replica.ID(publicKey: Array($0.publicKey.rawRepresentation)) == t.head.origin }!
            ranges[i] = (min(ranges[i]?.0 ?? t.head.sequence, t.head.sequence), max(ranges[i]?.1 ?? 0, t.head.sequence))
        }
        var through: [Replica.ID: Int64] = [:]
        for (i, r) in ranges { through[id(i)] = r.1 }
        return BundleHeader(
            kind: .changes, senderName: "codec test",
            created: HLCTimestamp(milliseconds: 1_763_683_300_000, counter: 0), since: .zero,
            through: History.Token(sequences: through),
            tables: [
                BundleHeader.TableSchema(name: Self.table, keyColumns: ["k"], columns: Self.columns + extraColumns)
            ],
            ranges: ranges.map { i, r in
                BundleHeader.OriginRange(
                    publicKey: Array(keys[i].publicKey.rawRepresentation), first: r.0, last: r.1,
                    previous: Chain.genesis(id(i)))
            })
    }

    func encode(_ transactions: [Transaction], extraColumns: [String] = []) throws -> [UInt8] {
        var encoder = try BundleEncoder(
            sink: BufferSink(), signingKey: sender, header: header(for: transactions, extraColumns: extraColumns))
        for t in transactions {
            let h = t.head
            try encoder.beginTransaction(
                origin: h.origin, sequence: h.sequence, timestamp: h.timestamp, author: h.author,
                contextName: h.contextName,
                processID: h.processID, changeCount: t.changes.count)
            for change in t.changes { try encoder.add(change) }
        }
        let keys = self.keys
        return try encoder.finish { origin, sequence, head in
            let key = keys.first { Replica.ID(publicKey: Array($0.publicKey.rawRepresentation)) == origin }!
            return try Attestation.sign(origin: key, sequence: sequence, head: head)
        }.bytes
    }

    static func decode(_ file: [UInt8]) throws -> [Transaction] {
        let decoder = try BundleDecoder(BufferSource(file))
        var out: [Transaction] = []
        while let head = try decoder.nextTransaction() {
            var changes: [History.Change] = []
            while let change = try decoder.nextChange() { changes.append(change) }
            out.append(Transaction(head: Head(head), changes: changes))
        }
        _ = try decoder.finish()
        return out
    }

    /// Nil when decoding refuses `file` with a BundleError; otherwise what happened instead.
    static func refusal(_ file: [UInt8]) -> String? {
        do {
            _ = try decode(file)
            return "accepted"
        } catch is BundleError {
            return nil
        } catch {
            return "threw \(type(of: error)): \(error)"
        }
    }

    /// Two origins, three transactions, every change type: small enough to damage exhaustively.
    func smallBundle() throws -> [UInt8] {
        let key = [History.Column("k", .integer(7))]
        return try encode([
            transaction(
                origin: 0, sequence: 1,
                changes: [
                    History.Change(
                        type: .insert, table: Self.table, key: key, values: key + [History.Column("a", .text("hi"))],
                        generation: 1)
                ]),
            transaction(
                origin: 1, sequence: 1,
                changes: [
                    History.Change(
                        type: .update, table: Self.table, key: key, values: [History.Column("b", .real(-0.0))],
                        generation: 1)
                ]),
            transaction(
                origin: 0, sequence: 2,
                changes: [
                    History.Change(
                        type: .delete, table: Self.table, key: key, values: [],
                        tombstone: key + [History.Column("c", .blob([1]))],
                        generation: 2)
                ]),
        ])
    }

    /// The length of transaction #1 of `aTransactionPrefixCut…` as §4.2 and §4.3 encode it.
    func recordLength(blobSize: Int) -> Int {
        func varint(_ v: UInt64) -> Int {
            var out: [UInt8] = []
            Varint.append(v, to: &out)
            return out.count
        }
        let t = transaction(origin: 0, sequence: 1, changes: [])
        let prefix =
            16 + varint(1) + varint(UInt64(t.head.timestamp.packed)) + 1 + (1 + 8) + 1 + 1
            + varint(UInt64(UInt32(bitPattern: t.head.processID!))) + varint(1)
        // insert, generation 1, "t", 1 key column ("k", INTEGER 1), 1 column ("a", BLOB), no attributes
        let change = 1 + 1 + 2 + 1 + 2 + 2 + 1 + 2 + 1 + varint(UInt64(blobSize)) + blobSize + 1
        return prefix + change + 1
    }
}
