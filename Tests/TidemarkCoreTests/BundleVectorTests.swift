import Foundation
import Testing
import TidemarkCore

/// The change-bundle vectors of `Protocol/vectors/` (Protocol/bundle.md §10): every valid vector
/// decodes to exactly its expected JSON, every invalid one is refused with a `BundleError` whose
/// rule is the one its manifest entry names.
///
/// Each vector runs in a child process (an exit test), so a decoder that crashes on one fails that
/// vector alone and the rest still report; a decoder that hangs trips the time limit.
@Suite struct BundleVectorTests {
    // A hang guard, not a timing check: the limit counts from when a case is started, and the rest
    // of the suite runs beside it on two cores (one run failed 223 cases of the vectors after 306 s).
    // 15 minutes, as the other hang guards allow.
    @Test(.timeLimit(.minutes(15)), arguments: Vectors.manifest.all)
    func vector(_ test: Vectors.Test) async {
        // The child exits 0 after checking; a crash shows as a signal. What it found goes to stderr.
        let result = await #expect(
            processExitsWith: .success, observing: [\.standardErrorContent], "\(test): the decoder crashed"
        ) { [tcId = test.tcId as Int] in
            let test = Vectors.manifest.all.first { $0.tcId == tcId }!
            if let problem = Vectors.check(test) {
                FileHandle.standardError.write(Data((Vectors.problemMarker + problem + "\n").utf8))
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        if let range = stderr.range(of: Vectors.problemMarker) {
            Issue.record("\(test): \(stderr[range.upperBound...].prefix(3000))")
        }
    }

    @Test func theManifestListsEveryVectorFileAndEveryFileExists() throws {
        let listed = Set(Vectors.manifest.all.map(\.file) + Vectors.manifest.all.compactMap(\.expected))
        var present: Set<String> = []
        for folder in ["valid", "invalid"] {
            for name in try FileManager.default.contentsOfDirectory(
                atPath: Vectors.root.appendingPathComponent(folder).path)
            where name.hasSuffix(".tmb") || name.hasSuffix(".json") {
                present.insert("\(folder)/\(name)")
            }
        }
        #expect(listed == present)
        #expect(Set(Vectors.manifest.all.map(\.tcId)).count == Vectors.manifest.all.count, "tcIds are unique")
        #expect(Vectors.manifest.algorithm == "tidemark-bundle-v1")
    }

    /// Every rule of bundle.md §7 has a vector, and every vector names a rule of §7.
    @Test func everyRejectionRuleHasAVector() throws {
        let spec = try String(
            contentsOf: Vectors.root.appendingPathComponent("../bundle.md").standardizedFileURL, encoding: .utf8)
        let rules = Set(
            spec.split(separator: "\n").compactMap { line -> String? in
                // Rule rows of §7 look like: | R12 | `bad-varint` | ... |
                let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
                guard cells.count >= 3, cells[0].hasPrefix("R"), Int(cells[0].dropFirst()) != nil,
                    cells[1].hasPrefix("`")
                else {
                    return nil
                }
                return cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            })
        #expect(!rules.isEmpty)
        let named = Set(Vectors.manifest.all.compactMap(\.error))
        #expect(rules.subtracting(named).isEmpty, "rules without a vector: \(rules.subtracting(named).sorted())")
        #expect(named.subtracting(rules).isEmpty, "vectors naming no rule of §7: \(named.subtracting(rules).sorted())")
    }

    /// The annotated example of bundle.md §8 is byte for byte `valid/example.tmb`.
    @Test func theSpecificationsAnnotatedExampleIsTheExampleVector() throws {
        let spec = try String(
            contentsOf: Vectors.root.appendingPathComponent("../bundle.md").standardizedFileURL, encoding: .utf8)
        let listing = try #require(spec.components(separatedBy: "<!-- example.tmb begin -->").dropFirst().first)
            .components(separatedBy: "<!-- example.tmb end -->")[0]
        var bytes: [UInt8] = []
        for line in listing.split(separator: "\n") {
            // "0000  89 54 4d ...   magic": an offset, two spaces, up to 16 hex bytes.
            let text = String(line)
            guard text.count > 6, text.prefix(4).allSatisfy(\.isHexDigit), text.dropFirst(4).hasPrefix("  ") else {
                continue
            }
            #expect(Int(text.prefix(4), radix: 16) == bytes.count, "offset of line \(text.prefix(4))")
            let hex = text.dropFirst(6).prefix(48).split(separator: " ")
            bytes += hex.compactMap { UInt8($0, radix: 16) }
        }
        #expect(bytes == Vectors.bytes("valid/example.tmb"))
    }
}

// MARK: - Loading and checking vectors

/// The vector corpus, found by walking up from this file to `Protocol/vectors/manifest.json`.
enum Vectors {
    struct Manifest: Decodable, Sendable {
        var algorithm: String
        var testGroups: [Group]
        var all: [Test] { testGroups.flatMap(\.tests) }
    }
    struct Group: Decodable, Sendable {
        var type: String
        var tests: [Test]
    }
    struct Test: Decodable, Sendable, CustomTestStringConvertible, CustomStringConvertible {
        var tcId: Int
        var comment: String
        var file: String
        var result: String
        var flags: [String]
        var expected: String?
        var error: String?
        var description: String { "#\(tcId) \(file)" }
        var testDescription: String { "#\(tcId) \(file): \(comment)" }
    }

    static let root: URL = {
        var dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while dir.path != "/" {
            let candidate = dir.appendingPathComponent("Protocol/vectors")
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("manifest.json").path) {
                return candidate
            }
            dir.deleteLastPathComponent()
        }
        fatalError("Protocol/vectors/manifest.json not found above \(#filePath)")
    }()

    static let manifest: Manifest = {
        let data = try! Data(contentsOf: root.appendingPathComponent("manifest.json"))
        return try! JSONDecoder().decode(Manifest.self, from: data)
    }()

    /// Marks a vector's problem on the exit-test child's standard error.
    static let problemMarker = "VECTOR PROBLEM: "

    static func bytes(_ path: String) -> [UInt8] { Array(try! Data(contentsOf: root.appendingPathComponent(path))) }

    /// Nil if the decoder does what the vector says; otherwise what went wrong.
    static func check(_ test: Test) -> String? {
        let file = bytes(test.file)
        let decoded: DecodedBundle
        do {
            decoded = try DecodedBundle(decoding: file)
        } catch let error as BundleError {
            if test.result == "valid" { return "a valid vector was refused: \(error)" }
            // Refused, and for the rule the manifest names (bundle.md §7), not just any.
            return error.rule.rawValue == test.error
                ? nil : "refused under \(error.rule), not \(test.error ?? "?") as the manifest says: \(error)"
        } catch {
            return "the decoder threw a \(type(of: error)), not a BundleError: \(error)"
        }
        guard test.result == "valid" else { return "an invalid vector (\(test.error ?? "?")) was accepted" }
        do {
            let data = try Data(contentsOf: root.appendingPathComponent(test.expected!))
            let expected = try JSONDecoder().decode(DecodedBundle.self, from: data)
            return expected.difference(from: decoded)
        } catch {
            return "cannot read \(test.expected!): \(error)"
        }
    }
}

/// A bundle as the vectors' expected JSON states it (bundle.md §10.2), or as the decoder read it.
struct DecodedBundle: Decodable, Equatable {
    struct Sender: Decodable, Equatable {
        var name: String
        var publicKey: String
        var replica: String
    }
    struct Table: Decodable, Equatable {
        var name: String
        var keyColumns: [String]
        var columns: [String]
    }
    struct Range: Decodable, Equatable {
        var origin: String
        var publicKey: String
        var first: Int64
        var last: Int64
        var previous: String
    }
    struct Transaction: Decodable, Equatable {
        var origin: String
        var sequence: Int64
        var timestamp: Int64
        var author: String?
        var contextName: String?
        var processID: Int32?
        var changes: [Change]
        /// The id of the schema version it was written under; absent or null for the initial schema.
        var schemaVersion: String?
        var chainHash: String
    }
    /// One version of the header's schema lineage (schema.md §4): its id, derived, and its change.
    struct SchemaVersion: Decodable, Equatable {
        var position: Int
        var id: String
        var change: String
    }
    struct Change: Decodable, Equatable {
        var type: String
        var generation: Int64
        var table: String
        var key: [Column]
        var columns: [Column]
    }
    struct Column: Decodable, Equatable {
        var name: String
        var value: SQLValue
        init(_ name: String, _ value: SQLValue) {
            self.name = name
            self.value = value
        }
        init(from decoder: Decoder) throws {
            var pair = try decoder.unkeyedContainer()
            name = try pair.decode(String.self)
            value = try pair.decode(JSONValue.self).value
        }
    }
    /// A snapshot's row state (§4.4): columns are `[name, value, clock]`, the clock
    /// `{"timestamp", "origin"}` or null.
    struct Row: Decodable, Equatable {
        struct Cell: Decodable, Equatable {
            var name: String
            var value: SQLValue
            var clock: Clock?
            init(_ name: String, _ value: SQLValue, _ clock: Clock?) {
                self.name = name
                self.value = value
                self.clock = clock
            }
            init(from decoder: Decoder) throws {
                var triple = try decoder.unkeyedContainer()
                name = try triple.decode(String.self)
                value = try triple.decode(JSONValue.self).value
                clock = try triple.decodeNil() ? nil : try triple.decode(Clock.self)
                guard triple.isAtEnd else {
                    throw DecodingError.dataCorruptedError(
                        in: triple, debugDescription: "a row-state column has three elements")
                }
            }
        }
        struct Clock: Decodable, Equatable {
            var timestamp: Int64
            var origin: String
        }
        var table: String
        var generation: Int64
        var key: [Column]
        var columns: [Cell]
    }
    struct Attestation: Decodable, Equatable {
        var origin: String
        var sequence: Int64
        var head: String
        var signature: String
    }

    var kind: String
    var sender: Sender
    var created: Int64
    var since: [String: Int64]
    var through: [String: Int64]
    var tables: [Table]
    var ranges: [Range]
    var transactions: [Transaction]
    /// Present only when the header carries a schema lineage.
    var schemaLineage: [SchemaVersion]?
    /// Present only when a watermark's header carries a row digest.
    var rowDigest: [DigestEntry]?
    struct DigestEntry: Decodable, Equatable {
        var name: String
        var rows: Int64
        var sum: String
    }
    /// Present only when a snapshot's header carries generation floors.
    var generationFloors: [Floor]?
    struct Floor: Decodable, Equatable {
        var name: String
        var floor: Int64
    }
    /// Present for snapshots only.
    var rowStates: [Row]?
    var attestations: [Attestation]
    var digest: String
    var signature: String

    /// Reads every transaction and change, or for a snapshot every row state, then `finish()`.
    init(decoding file: [UInt8]) throws {
        let decoder = try BundleDecoder(BufferSource(file))
        var transactions: [Transaction] = []
        var rows: [Row]?
        if decoder.header.kind == .snapshot {
            var states: [Row] = []
            while let r = try decoder.nextRowState() {
                states.append(
                    Row(
                        table: r.table, generation: r.generation, key: r.key.map { Column($0.name, $0.value) },
                        columns: r.cells.map { c in
                            Row.Cell(
                                c.name, c.value,
                                c.clock.map { Row.Clock(timestamp: $0.timestamp.packed, origin: $0.origin.description) }
                            )
                        }))
            }
            rows = states
        }
        while decoder.header.kind != .snapshot, let head = try decoder.nextTransaction() {
            var changes: [Change] = []
            while let c = try decoder.nextChange() {
                let carried: [History.Column]
                switch c.type {
                case .insert: carried = Array(c.values.dropFirst(c.key.count))
                case .update: carried = c.values
                case .delete: carried = Array((c.tombstone ?? []).dropFirst(c.key.count))
                }
                changes.append(
                    Change(
                        type: c.type.rawValue, generation: c.generation, table: c.table,
                        key: c.key.map { Column($0.name, $0.value) },
                        columns: carried.map { Column($0.name, $0.value) }))
            }
            transactions.append(
                Transaction(
                    origin: head.origin.description, sequence: head.sequence, timestamp: head.timestamp.packed,
                    author: head.author,
                    contextName: head.contextName, processID: head.processID, changes: changes,
                    schemaVersion: head.schemaPosition == 0
                        ? nil : decoder.header.lineage[head.schemaPosition - 1].hexID,
                    chainHash: HexCoding.encode(decoder.lastCompleted!.chainHash)))
        }
        let v = try decoder.finish()
        let h = v.header
        kind = ["", "changes", "snapshot", "watermark"][Int(h.kind.rawValue)]
        sender = Sender(name: h.senderName, publicKey: HexCoding.encode(v.senderKey), replica: v.sender.description)
        created = h.created.packed
        since = Dictionary(uniqueKeysWithValues: h.since.sequences.map { ($0.key.description, $0.value) })
        through = Dictionary(uniqueKeysWithValues: h.through.sequences.map { ($0.key.description, $0.value) })
        tables = h.tables.map { Table(name: $0.name, keyColumns: $0.keyColumns, columns: $0.columns) }
        ranges = h.ranges.map {
            Range(
                origin: $0.origin.description, publicKey: HexCoding.encode($0.publicKey), first: $0.first,
                last: $0.last,
                previous: HexCoding.encode($0.previous))
        }
        self.transactions = transactions
        schemaLineage =
            h.lineage.isEmpty
            ? nil
            : h.lineage.map {
                SchemaVersion(position: $0.position, id: $0.hexID, change: HexCoding.encode($0.change.encoded()))
            }
        rowStates = rows
        rowDigest = h.digest.map { digest in
            digest.tables.map {
                DigestEntry(name: $0.name, rows: Int64($0.rows), sum: HexCoding.encode(bigEndian: $0.sum))
            }
        }
        generationFloors = h.floors.isEmpty ? nil : h.floors.map { Floor(name: $0.table, floor: $0.floor) }
        attestations = v.attestations.map {
            Attestation(
                origin: $0.origin.description, sequence: $0.sequence, head: HexCoding.encode($0.head),
                signature: HexCoding.encode($0.signature))
        }
        digest = HexCoding.encode(v.digest)
        signature = HexCoding.encode(file.suffix(64))
    }

    /// Nil if equal; otherwise the first difference, named.
    func difference(from actual: DecodedBundle) -> String? {
        if self == actual { return nil }
        func differ<T: Equatable>(_ what: String, _ a: T, _ b: T) -> String? {
            a == b ? nil : "\(what): expected \(a), decoded \(b)"
        }
        let header =
            differ("kind", kind, actual.kind) ?? differ("sender", sender, actual.sender) ?? differ(
                "created", created, actual.created)
            ?? differ("since", since, actual.since) ?? differ("through", through, actual.through) ?? differ(
                "tables", tables, actual.tables)
            ?? differ("ranges", ranges, actual.ranges) ?? differ("attestations", attestations, actual.attestations)
            ?? differ("digest", digest, actual.digest) ?? differ("signature", signature, actual.signature)
        if let header { return header }
        if let lineage = differ("schema lineage", schemaLineage, actual.schemaLineage) { return lineage }
        if let digest = differ("row digest", rowDigest, actual.rowDigest) { return digest }
        if let floors = differ("generation floors", generationFloors, actual.generationFloors) { return floors }
        if transactions.count != actual.transactions.count {
            return "expected \(transactions.count) transactions, decoded \(actual.transactions.count)"
        }
        for (i, (e, a)) in zip(transactions, actual.transactions).enumerated() where e != a {
            return "transaction \(i): expected \(e), decoded \(a)"
        }
        if let different = differ("row states", rowStates?.count, actual.rowStates?.count) { return different }
        for (i, (e, a)) in zip(rowStates ?? [], actual.rowStates ?? []).enumerated() where e != a {
            return "row state \(i): expected \(e), decoded \(a)"
        }
        return "the documents differ"
    }
}
