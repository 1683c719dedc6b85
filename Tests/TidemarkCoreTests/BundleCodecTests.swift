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
        let fixture = CodecFixture(origins: 3)
        for round in 0..<20 {
            let transactions = fixture.randomTransactions(count: Int.random(in: 0...12, using: &rng), using: &rng)
            let file = try fixture.encode(transactions)
            let decoded = try CodecFixture.decode(file)
            #expect(decoded.count == transactions.count, "seed \(seed) round \(round)")
            for (expected, actual) in zip(transactions, decoded) {
                #expect(actual.head == expected.head, "seed \(seed) round \(round)")
                #expect(
                    actual.changes == expected.changes,
                    "seed \(seed) round \(round) transaction \(expected.head.sequence)")
            }
        }
    }

    /// §4.3 orders a change's carried columns by name whatever order they are given in, and leaves
    /// the key out of an insert's values and a delete's tombstone wherever it stands.
    @Test func columnsInAnyOrderEncodeInOrderOfName() {
        let fixture = CodecFixture(origins: 1)
        func chainHash(_ change: History.Change) -> [UInt8] {
            var hasher = ChainHasher(
                previous: [], origin: fixture.id(0), sequence: 1, timestamp: HLCTimestamp(packed: 1 << 20),
                author: nil, contextName: nil, processID: nil, changeCount: 1)
            hasher.add(change)
            return hasher.finish()
        }
        let key = History.Column("k", .integer(7))
        let columns = [
            History.Column("a", .text("x")), History.Column("b", .integer(1)), History.Column("ba", .real(2.5)),
            History.Column("c", .null), History.Column("é", .blob([1])),
        ]
        let orders: [[History.Column]] = [
            [key] + columns, columns + [key], Array(columns.reversed()) + [key],
            [columns[2], key, columns[0], columns[4], columns[1], columns[3]],
        ]
        for type in [History.ChangeType.insert, .update, .delete] {
            func change(_ given: [History.Column]) -> History.Change {
                let values = type == .update ? given.filter { $0 != key } : given
                return History.Change(
                    type: type, table: "t", key: [key], values: type == .delete ? [] : values,
                    tombstone: type == .delete ? values : nil, generation: 3)
            }
            let inOrder = chainHash(change(orders[0]))
            for order in orders.dropFirst() {
                #expect(chainHash(change(order)) == inOrder, "\(type) given as \(order.map(\.name))")
            }
        }
    }

    @Test func extremeValuesRoundTripBitForBit() throws {
        let fixture = CodecFixture(origins: 1)
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
        let decoded = try CodecFixture.decode(try fixture.encode([transaction], extraColumns: columns.map(\.name)))
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
        let fixture = CodecFixture(origins: 1)
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
        #expect(throws: Never.self) { _ = try CodecFixture.decode(file) }
    }

    @Test func truncationAtEveryByteIsRefused() async {
        await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let file = try CodecFixture(origins: 2).smallBundle()
            var problems: [String] = []
            for length in 0..<file.count {
                if let problem = CodecFixture.refusal(Array(file.prefix(length))) {
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
            let file = try CodecFixture(origins: 2).smallBundle()
            var problems: [String] = []
            for bit in 0..<file.count * 8 {
                var damaged = file
                damaged[bit / 8] ^= 1 << UInt8(bit % 8)
                if let problem = CodecFixture.refusal(damaged) {
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
