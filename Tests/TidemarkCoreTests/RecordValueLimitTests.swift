import Crypto
import Foundation
import Testing
import TidemarkCore
import TidemarkTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The record limit of Protocol/bundle.md §4.1 (R36): the TEXT and BLOB values of one change or
/// row state, key values included, total at most `BundleFormat.maxRecordValueBytes`. The decoder
/// refuses a record that declares more before reading the value that passes the limit, so a small
/// hostile file cannot make it hold 63 values of 64 MiB; the encoder refuses to write one.
@Suite struct RecordValueLimitTests {
    static let limit = BundleFormat.maxRecordValueBytes
    static let key = try! Curve25519.Signing.PrivateKey(
        rawRepresentation: Array(SHA256.hash(data: Array("record-limit".utf8))))
    static var origin: Replica.ID { Replica.ID(publicKey: Array(key.publicKey.rawRepresentation)) }
    static let timestamp = HLCTimestamp(milliseconds: 1_763_683_300_000, counter: 0)

    @Test func theLimitIsTheSpecifications64MiB() {
        #expect(BundleFormat.maxRecordValueBytes == 67_108_864)
        #expect(BundleFormat.maxRecordValueBytes == BundleFormat.maxValueLength)
    }

    // MARK: - Encoder and decoder at the limit

    /// Key TEXT (2 bytes) plus two BLOBs filling the rest: exactly the limit round-trips; one byte
    /// more is refused by the encoder before it writes anything of the change.
    @Test func aChangeAtTheLimitRoundTripsAndOneByteMoreIsRefusedByTheEncoder() throws {
        let half = Self.limit / 2
        let atLimit = Self.insert(key: .text("ab"), a: half, b: half - 2)
        let file = try Self.encode([atLimit])
        let decoded = try Self.decode(file)
        #expect(decoded == [atLimit])

        let over = Self.insert(key: .text("ab"), a: half, b: half - 1)
        #expect(
            throws: BundleWriteError.recordTooLarge(
                table: "t", key: [History.Column("k", .text("ab"))], bytes: Self.limit + 1)
        ) {
            _ = try Self.encode([over])
        }
        // A delete's tombstone counts too, and a single value over the value limit is covered.
        let tombstone = History.Change(
            type: .delete, table: "t", key: [History.Column("k", .integer(1))], values: [],
            tombstone: [
                History.Column("k", .integer(1)),
                History.Column("a", .text(String(repeating: "x", count: Self.limit + 1))),
            ],
            generation: 2)
        #expect(
            throws: BundleWriteError.recordTooLarge(
                table: "t", key: [History.Column("k", .integer(1))], bytes: Self.limit + 1)
        ) {
            _ = try Self.encode([tombstone])
        }
    }

    /// A transaction whose author or context name a bundle cannot carry (history made by a
    /// build that let one in) is refused by the encoder rather than written into a bundle every
    /// reader rejects.
    @Test func theEncoderRefusesANameOutsideItsRange() throws {
        for (author, context) in [("", nil), (nil, String(repeating: "c", count: 4097))] as [(String?, String?)] {
            var encoder = try BundleEncoder(
                sink: BufferSink(), signingKey: Self.key, header: Self.header(kind: .changes))
            #expect(throws: BundleWriteError.self) {
                try encoder.beginTransaction(
                    origin: Self.origin, sequence: 1, timestamp: Self.timestamp, author: author, contextName: context,
                    processID: nil, changeCount: 1)
            }
        }
    }

    @Test func theEncoderRefusesARowStateOverTheLimit() throws {
        var encoder = try BundleEncoder(sink: BufferSink(), signingKey: Self.key, header: Self.header(kind: .snapshot))
        let clock = MergeClock(timestamp: Self.timestamp, origin: Self.origin)
        try encoder.add(
            RowState(
                table: "t", key: [History.Column("k", .text("ab"))], generation: 1,
                cells: [
                    RowState.Cell(name: "a", value: .blob([UInt8](repeating: 1, count: Self.limit - 2)), clock: clock)
                ]))
        let over = RowState(
            table: "t", key: [History.Column("k", .text("abc"))], generation: 1,
            cells: [RowState.Cell(name: "a", value: .blob([UInt8](repeating: 1, count: Self.limit - 2)), clock: clock)])
        #expect(throws: BundleWriteError.recordTooLarge(table: "t", key: over.key, bytes: Self.limit + 1)) {
            try encoder.add(over)
        }
    }

    @Test func theWriteErrorNamesTheRowWithShortExcerpts() {
        let error = BundleWriteError.recordTooLarge(
            table: "items",
            key: [
                History.Column("id", .text("big")), History.Column("v", .blob([UInt8](repeating: 0xab, count: 1000))),
            ],
            bytes: 83_886_083)
        #expect(
            error.description
                == "row (id = 'big', v = x'abababababababababababababababab…' (1000 bytes)) of table 'items' holds 83886083 bytes of "
                + "TEXT and BLOB values; a bundle record holds at most 67108864 bytes (64 MiB)")
    }

    // MARK: - The vectors

    /// The R36 vectors are refused with `recordTooLarge` at the value that passes the limit: the
    /// change's second BLOB (after the 32 MiB of the first), the row state's only BLOB (its TEXT key
    /// already counted), in both cases before the value's bytes.
    @Test func theRecordLimitVectorsAreRefusedAtTheValueThatPassesTheLimit() throws {
        func refusal(_ file: String) -> BundleError? {
            do {
                _ = try DecodedBundle(decoding: Vectors.bytes(file))
                return nil
            } catch {
                return error as? BundleError
            }
        }
        guard case .record(.recordTooLarge(let bytes), let offset)? = refusal("invalid/record-too-large.tmb") else {
            Issue.record("record-too-large: \(String(describing: refusal("invalid/record-too-large.tmb")))")
            return
        }
        #expect(bytes == Self.limit + 1)
        #expect(
            (Self.limit / 2)..<(Self.limit / 2 + 200) ~= offset, "after the first BLOB's 32 MiB, at the second's length"
        )
        guard
            case .record(.recordTooLarge(let rowBytes), let rowOffset)? = refusal("invalid/snapshot-row-too-large.tmb")
        else {
            Issue.record("snapshot-row-too-large: \(String(describing: refusal("invalid/snapshot-row-too-large.tmb")))")
            return
        }
        #expect(rowBytes == Self.limit + 1)
        #expect(rowOffset < 1000, "at the length of the BLOB, before its bytes")
        let rules = Vectors.manifest.all.filter { $0.error == "record-too-large" }.map(\.file).sorted()
        #expect(rules == ["invalid/record-too-large.tmb", "invalid/snapshot-row-too-large.tmb"])
    }

    // MARK: - The reported amplification

    /// The reported out-of-memory: one insert whose 62 BLOBs of 16 MiB each (about 1 GiB) stream
    /// in from a source that holds nothing, so everything the process holds is the decoder's. The
    /// first four BLOBs fill the limit exactly and are read; the fifth's length is refused, at the
    /// byte after it, before any of its bytes. Runs in a child process, whose peak resident set
    /// size must stay far below what holding the values would take.
    // A hang guard, not a timing check: the limit counts from when the test is started, and the
    // rest of the suite runs beside it on two cores. 15 minutes, as the other hang guards allow.
    @Test(.timeLimit(.minutes(15))) func aChangeOfManyLargeValuesIsRefusedQuicklyInBoundedMemory() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let started = ContinuousClock.now
            let bundle = AmplifiedBundle(columns: 62, valueLength: 16 << 20)
            var outcome: BundleError?
            do {
                let decoder = try BundleDecoder(bundle)
                try decoder.skipRecords()
                _ = try decoder.finish()
            } catch let error as BundleError {
                outcome = error
            } catch {
                FileHandle.standardError.write(Data("PROBLEM: not a BundleError: \(error)\n".utf8))
                return
            }
            let elapsed = ContinuousClock.now - started
            let peak = PeakMemory.residentBytes()
            var problems: [String] = []
            let expected = BundleError.record(.recordTooLarge(bytes: 5 << 24), offset: bundle.fifthValueStart)
            if outcome != expected {
                problems.append("refused with \(String(describing: outcome)), expected \(expected)")
            }
            // Holding every value would take 992 MiB. One record's 64 MiB, a 16 MiB chunk, the
            // source's 16 MiB read and the test process itself came to 109 MiB on Linux.
            if peak > 192 << 20 { problems.append("peak resident set size \(peak >> 20) MiB, more than 192 MiB") }
            if elapsed > .seconds(30) { problems.append("refusing it took \(elapsed)") }
            FileHandle.standardError.write(
                Data("refused in \(elapsed), peak resident set size \(peak >> 20) MiB\n".utf8))
            if !problems.isEmpty {
                FileHandle.standardError.write(Data(("PROBLEM: " + problems.joined(separator: "; ") + "\n").utf8))
            }
        }
        // The child reports on standard error (and exits 0) so that its measurements show here.
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        print(
            "RecordValueLimitTests.aChangeOfManyLargeValuesIsRefusedQuicklyInBoundedMemory: \(stderr)", terminator: "")
        #expect(stderr.contains("refused in"), "the child reported nothing")
        #expect(!stderr.contains("PROBLEM"), "\(stderr)")
    }

    // MARK: - Helpers

    static func insert(key: SQLValue, a: Int, b: Int) -> History.Change {
        let keyColumn = History.Column("k", key)
        return History.Change(
            type: .insert, table: "t", key: [keyColumn],
            values: [
                keyColumn, History.Column("a", .blob([UInt8](repeating: 7, count: a))),
                History.Column("b", .blob([UInt8](repeating: 9, count: b))),
            ], generation: 1)
    }

    static func header(kind: BundleFormat.Kind, columns: [String] = ["a", "b", "k"]) -> BundleHeader {
        BundleHeader(
            kind: kind, senderName: "limit test", created: timestamp, since: .zero,
            through: kind == .changes ? History.Token(sequences: [origin: 1]) : .zero,
            tables: [BundleHeader.TableSchema(name: "t", keyColumns: ["k"], columns: columns)],
            ranges: kind == .changes
                ? [
                    BundleHeader.OriginRange(
                        publicKey: Array(key.publicKey.rawRepresentation), first: 1, last: 1,
                        previous: Chain.genesis(origin))
                ]
                : [])
    }

    /// A changes bundle of one transaction, Self.origin's #1.
    static func encode(_ changes: [History.Change], columns: [String] = ["a", "b", "k"]) throws -> [UInt8] {
        var encoder = try BundleEncoder(
            sink: BufferSink(), signingKey: key, header: header(kind: .changes, columns: columns))
        try encoder.beginTransaction(
            origin: origin, sequence: 1, timestamp: timestamp, author: nil, contextName: nil, processID: nil,
            changeCount: changes.count)
        for change in changes { try encoder.add(change) }
        return try encoder.finish { _, sequence, head in
            try Attestation.sign(origin: key, sequence: sequence, head: head)
        }.bytes
    }

    static func decode(_ file: [UInt8]) throws -> [History.Change] {
        let decoder = try BundleDecoder(BufferSource(file))
        var changes: [History.Change] = []
        while try decoder.nextTransaction() != nil {
            while let change = try decoder.nextChange() { changes.append(change) }
        }
        _ = try decoder.finish()
        return changes
    }
}

/// A hostile bundle made on the fly, like the reported reproduction (`amplify.py`): a genuine
/// preamble and header, then uncompressed TRANSACTIONS frames holding one insert into a table of
/// `columns` BLOB columns, each of `valueLength` zero bytes, and then nothing (no attestation, no
/// signature). The zero runs are produced as they are read, so the source holds none of them.
struct AmplifiedBundle: ByteSource {
    private enum Piece {
        case bytes([UInt8])
        case zeros(Int)
        var count: Int {
            switch self {
            case .bytes(let b): return b.count
            case .zeros(let n): return n
            }
        }
    }
    private var pieces: [Piece] = []
    private var index = 0
    private var offset = 0
    /// The record-stream offset just after the fifth value's length: where the limit is passed.
    private(set) var fifthValueStart = 0

    init(columns: Int, valueLength: Int) {
        precondition(valueLength <= 16 << 20 && columns + 1 <= BundleFormat.maxColumns)
        let names = (0..<columns).map { String(format: "c%02d", $0) }
        let key = RecordValueLimitTests.key
        let origin = RecordValueLimitTests.origin
        // The preamble and header frame, as the encoder writes them for this table and range.
        let header = BundleHeader(
            kind: .changes, senderName: "amplifier", created: RecordValueLimitTests.timestamp, since: .zero,
            through: History.Token(sequences: [origin: 1]),
            tables: [BundleHeader.TableSchema(name: "t", keyColumns: ["k"], columns: names + ["k"])],
            ranges: [
                BundleHeader.OriginRange(
                    publicKey: Array(key.publicKey.rawRepresentation), first: 1, last: 1,
                    previous: Chain.genesis(origin))
            ])
        var encoder = try! BundleEncoder(sink: BufferSink(), signingKey: key, header: header)
        try! encoder.beginTransaction(
            origin: origin, sequence: 1, timestamp: RecordValueLimitTests.timestamp, author: nil, contextName: nil,
            processID: nil,
            changeCount: 0)
        let small = try! encoder.finish { _, sequence, head in
            try Attestation.sign(origin: key, sequence: sequence, head: head)
        }.bytes
        let headerEnd =
            BundleFormat.preambleLength + 6
            + small[BundleFormat.preambleLength + 2..<BundleFormat.preambleLength + 6].reduce(0) {
                $0 << 8 | Int($1)
            }
        pieces.append(.bytes(Array(small[..<headerEnd])))

        // The record stream: the transaction prefix and the change up to its column count…
        var record = origin.bytes
        Varint.append(1, to: &record)  // sequence
        Varint.append(UInt64(RecordValueLimitTests.timestamp.packed), to: &record)
        record += [0, 0, 0]  // no author, context or process id
        Varint.append(1, to: &record)  // one change
        record += [1, 1]  // insert, generation 1
        record += Self.name("t") + [1] + Self.name("k") + [1, 2]  // key k = INTEGER 1
        Varint.append(UInt64(columns), to: &record)
        var stream = record.count
        frame(.bytes(record))
        // …then each column: name, BLOB tag and length in one frame, its zeros in the next.
        for (i, name) in names.enumerated() {
            var head = Self.name(name) + [4]
            Varint.append(UInt64(valueLength), to: &head)
            stream += head.count
            if i == 4 { fifthValueStart = stream }
            frame(.bytes(head))
            frame(.zeros(valueLength))
            stream += valueLength
        }
        frame(.bytes([0, 0]))  // change and transaction attribute counts
    }

    private mutating func frame(_ payload: Piece) {
        let n = UInt32(payload.count)
        pieces.append(
            .bytes([
                BundleFormat.FrameType.transactions.rawValue, 0, UInt8(n >> 24), UInt8(n >> 16 & 0xff),
                UInt8(n >> 8 & 0xff), UInt8(n & 0xff),
            ]))
        pieces.append(payload)
    }

    private static func name(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        Varint.append(UInt64(s.utf8.count), to: &out)
        return out + Array(s.utf8)
    }

    mutating func read(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count, index < pieces.count {
            let piece = pieces[index]
            let take = min(count - out.count, piece.count - offset)
            switch piece {
            case .bytes(let b): out += b[offset..<offset + take]
            case .zeros where out.isEmpty: out = [UInt8](repeating: 0, count: take)
            case .zeros: out += repeatElement(0, count: take)
            }
            offset += take
            if offset == piece.count {
                index += 1
                offset = 0
            }
        }
        return out
    }
}
