import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Every way an import refuses a bundle, and that a refused import leaves the store exactly as it
/// was (schema, user tables, `tidemark_transactions`, `tidemark_changes` and the other bookkeeping).
@Suite struct BundleRejectionTests {
    /// A sender `a` with two transactions and a receiver `b` that trusts it and has a row of its own.
    struct Pair {
        let directory: TemporaryDirectory
        let a: TestReplica
        let b: TestReplica

        init(trust: Bool = true) throws {
            directory = try TemporaryDirectory("tidemark-reject")
            a = try TestReplica("a", in: directory)
            b = try TestReplica("b", in: directory)
            if trust { try b.trust(a) }
            _ = try a.store.write(author: "a") { db in
                try db.execute(
                    sql:
                        "INSERT INTO items(id, name, qty, photo) VALUES ('a-1', 'One', 1, x'0102'), ('a-2', 'Two', 2, NULL)"
                )
                try db.execute(sql: "INSERT INTO tags VALUES ('a-1', 'red', 1)")
            }
            _ = try a.store.execute(
                sql: "UPDATE items SET price = 2.5 WHERE id = 'a-1'; DELETE FROM items WHERE id = 'a-2'")
            _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-1', 'mine')")
        }

        /// `a`'s export of everything, as a file in the directory.
        func bundle(_ name: String = "a.tmb") throws -> String {
            try a.export(to: directory.file(name)).path
        }
    }

    // MARK: - Trust and signatures

    @Test func unknownSignerIsRefusedWithTheCommandToTrustIt() throws {
        let pair = try Pair(trust: false)
        let path = try pair.bundle()
        let error = try ExchangeExpect.rejected(pair.b, "unknown signer") {
            try pair.b.store.importBundle(at: path)
        } matches: {
            $0 == .unknownSigner(path: path, name: "a", publicKey: pair.a.publicKeyBase64)
        }
        #expect(error?.description == "\(path): signed by unknown replica 'a' (key \(pair.a.publicKeyBase64))")
        #expect(error?.hint == "if you trust it, add its public key with Store.addPeer: \(pair.a.publicKeyBase64)")
    }

    @Test func relayedTransactionsOfAnUntrustedOriginAreRefused() throws {
        let pair = try Pair(trust: false)
        let c = try TestReplica("c", in: pair.directory)
        try c.trust(pair.a)
        try pair.b.trust(c)
        _ = try c.store.importBundle(at: try pair.bundle())
        let relayed = try c.export(to: pair.directory.file("c.tmb")).path
        try ExchangeExpect.rejected(pair.b, "untrusted origin") {
            try pair.b.store.importBundle(at: relayed)
        } matches: {
            $0 == .unknownOrigin(path: relayed, origin: pair.a.id.description)
        }
    }

    @Test func aRemovedPeerIsRefusedFromTheNextImportOn() throws {
        let pair = try Pair()
        let first = try pair.bundle("1.tmb")
        _ = try pair.b.store.importBundle(at: first)
        _ = try pair.a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-3')")
        let second = try pair.a.export(since: try pair.b.store.currentToken(), to: pair.directory.file("2.tmb")).path

        try pair.b.store.removePeer(name: "a")
        #expect(try pair.b.store.peers().isEmpty)
        try ExchangeExpect.rejected(pair.b, "removed peer") {
            try pair.b.store.importBundle(at: second)
        } matches: {
            $0 == .unknownSigner(path: second, name: "a", publicKey: pair.a.publicKeyBase64)
        }
        #expect(throws: ExchangeError.unknownPeer("a")) { try pair.b.store.removePeer(name: "a") }
        try pair.b.trust(pair.a)
        #expect(try pair.b.store.importBundle(at: second).appliedTransactions == 1)
    }

    @Test func aBadSignatureIsRefused() throws {
        let pair = try Pair()
        let path = try pair.bundle()
        let original = try BundleBytes(contentsOf: path)
        let signature = original.frames.last!.payload

        var flipped = original
        flipped.bytes[signature.lowerBound + 10] ^= 0x40
        try flipped.write(to: path)
        try ExchangeExpect.rejected(pair.b, "altered signature") {
            try pair.b.store.importBundle(at: path)
        } matches: {
            $0 == .badBundle(path: path, .verification(.badSignature))
        }

        // Signed by a key other than the one the preamble names (b's own, even).
        var forged = original
        try forged.resign(with: pair.b.key)
        try forged.write(to: path)
        try ExchangeExpect.rejected(pair.b, "signed by another key") {
            try pair.b.store.importBundle(at: path)
        } matches: {
            $0 == .badBundle(path: path, .verification(.badSignature))
        }

        // The same bytes re-signed by the right key are accepted: the helper signs correctly.
        var resigned = original
        try resigned.resign(with: pair.a.key)
        try resigned.write(to: path)
        #expect(try pair.b.store.importBundle(at: path).appliedTransactions == 2)
    }

    // MARK: - Damage anywhere

    /// A bundle relayed by `b` with transactions of two origins: preamble, header, a transactions
    /// frame, two attestations and the signature.
    static func relayedBundle() throws -> (receiver: TestReplica, bytes: BundleBytes, directory: TemporaryDirectory) {
        let pair = try Pair()
        _ = try pair.b.store.importBundle(at: try pair.bundle())
        let c = try TestReplica("c", in: pair.directory)
        try c.trust(pair.a, pair.b)
        let bytes = try BundleBytes(contentsOf: try pair.b.export(to: pair.directory.file("relay.tmb")).path)
        #expect(bytes.frames.map(\.type) == [0x01, 0x02, 0x03, 0x03, 0x7F])
        return (c, bytes, pair.directory)
    }

    @Test func everySingleBitFlipIsRefused() throws {
        let (receiver, bundle, directory) = try Self.relayedBundle()
        let path = directory.file("flipped.tmb")
        let reader = try StoreSnapshot.Reader(receiver.path)
        let before = try reader.everything()
        var accepted: [Int] = []
        var changed: [Int] = []
        var regions: [String: Int] = [:]
        let started = ContinuousClock.now
        // Every byte, one bit each (bit offset mod 8, so every bit position is hit in every region).
        for offset in bundle.bytes.indices {
            for bit in [offset % 8] {
                try Data(bundle.flippingBit(bit, at: offset)).write(to: URL(fileURLWithPath: path))
                regions[Self.region(of: offset, in: bundle), default: 0] += 1
                do {
                    _ = try receiver.store.importBundle(at: path)
                    accepted.append(offset)
                } catch is ExchangeError {
                }
                #expect(throws: ExchangeError.self, "byte \(offset) bit \(bit): inspect accepted it") {
                    _ = try Store.inspectBundle(at: path) { _, _ in }
                }
                if try reader.everything() != before { changed.append(offset) }
            }
        }
        print(
            "everySingleBitFlipIsRefused: \(bundle.bytes.count) flips in \(ContinuousClock.now - started); by region \(regions.sorted { $0.key < $1.key })"
        )
        #expect(accepted.isEmpty, "flips accepted at byte offsets \(accepted)")
        #expect(changed.isEmpty, "the store changed after flips at \(changed)")
        #expect(try receiver.everything() == before)
        #expect(Set(regions.keys) == ["preamble", "frame 0x1", "frame 0x2", "frame 0x3", "frame 0x7f"])
        // And the intact bundle is still accepted afterwards.
        try bundle.write(to: path)
        #expect(try receiver.store.importBundle(at: path).appliedTransactions == 3)
    }

    @Test func everyTruncationIsRefused() throws {
        let (receiver, bundle, directory) = try Self.relayedBundle()
        let path = directory.file("cut.tmb")
        let before = try receiver.everything()
        var accepted: [Int] = []
        for length in 0..<bundle.bytes.count {
            try Data(bundle.bytes.prefix(length)).write(to: URL(fileURLWithPath: path))
            do {
                _ = try receiver.store.importBundle(at: path)
                accepted.append(length)
            } catch let error as ExchangeError {
                if length >= BundleFormat.preambleLength, length % 37 == 0 {
                    #expect(error.bundleError != nil, "cut at \(length): \(error)")
                }
            }
        }
        #expect(accepted.isEmpty, "prefixes accepted: \(accepted)")
        #expect(try receiver.everything() == before)
        // One byte too many is refused as well.
        try Data(bundle.bytes + [0]).write(to: URL(fileURLWithPath: path))
        try ExchangeExpect.rejected(receiver, "trailing byte") {
            try receiver.store.importBundle(at: path)
        } matches: {
            $0.bundleError == .framing(.trailingBytes, offset: bundle.bytes.count)
        }
    }

    static func region(of offset: Int, in bundle: BundleBytes) -> String {
        guard let frame = bundle.frame(containing: offset) else { return "preamble" }
        return "frame 0x\(String(frame.type, radix: 16))"
    }

    // MARK: - Format defects, each the only defect of a re-signed bundle

    @Test func anUnsupportedFormatVersionIsRefused() throws {
        let pair = try Pair()
        let path = try pair.bundle()
        for (high, low, version) in [(0, 2, 2), (1, 0, 256), (0, 0, 0)] as [(UInt8, UInt8, UInt16)] {
            var bytes = try BundleBytes(contentsOf: path)
            bytes.bytes[8] = high
            bytes.bytes[9] = low
            try bytes.resign(with: pair.a.key)
            let damaged = pair.directory.file("v\(version).tmb")
            try bytes.write(to: damaged)
            let error = try ExchangeExpect.rejected(pair.b, "version \(version)") {
                try pair.b.store.importBundle(at: damaged)
            } matches: {
                $0 == .badBundle(path: damaged, .framing(.unsupportedVersion(version), offset: 8))
            }
            #expect(error?.description.contains("unsupported format version \(version)") == true)
        }
    }

    @Test func lengthsPointingPastTheEndAreRefused() throws {
        let pair = try Pair()
        let original = try BundleBytes(contentsOf: try pair.bundle())
        let header = original.frames[0]
        let transactions = original.frames(ofType: BundleBytes.transactionsType)[0]
        let signature = original.frames.last!
        func setLength(_ frame: BundleBytes.Frame, _ length: Int, in bytes: inout BundleBytes) {
            bytes.bytes.replaceSubrange(
                frame.lengthField, with: (0..<4).map { UInt8(truncatingIfNeeded: length >> (24 - 8 * $0)) })
        }
        var cases: [(String, BundleBytes, (BundleError) -> Bool)] = []

        var bytes = original
        setLength(header, original.bytes.count, in: &bytes)
        cases.append(
            ("header frame length past the end", bytes, { $0 == .framing(.truncated, offset: original.bytes.count) }))

        bytes = original
        setLength(transactions, transactions.payload.count + 10_000, in: &bytes)
        cases.append(
            (
                "transactions frame length past the end", bytes,
                { $0 == .framing(.truncated, offset: original.bytes.count) }
            ))

        bytes = original
        setLength(signature, 65, in: &bytes)
        cases.append(
            ("signature frame length past the end", bytes, { $0 == .framing(.truncated, offset: original.bytes.count) })
        )

        bytes = original
        setLength(transactions, BundleFormat.maxFrameLength + 1, in: &bytes)
        cases.append(
            (
                "frame length over the limit", bytes,
                { $0 == .framing(.frameTooLong(BundleFormat.maxFrameLength + 1), offset: transactions.start + 2) }
            ))

        // The sender name's length (header byte 1, after the kind) points past the header payload.
        bytes = try Self.headerWithNameLengthPastTheEnd(original)
        try bytes.resign(with: pair.a.key)
        cases.append(
            (
                "name length past the header", bytes,
                { if case .framing(.badHeader("ends early", .badHeader), _) = $0 { true } else { false } }
            ))

        // The declared inflated length of the transactions chunk is larger than what inflates.
        bytes = original
        bytes.bytes[transactions.payload.lowerBound + 1] &+= 1
        try bytes.resign(with: pair.a.key)
        cases.append(
            ("inflated length past the data", bytes, { $0 == .framing(.badCompression, offset: transactions.start) }))

        // A text value's length points past the end of the records (a level-0 bundle, re-attested).
        var crafted = try Self.craftedBundle(pair, name: "LENGTH-MARK")
        let marker = [UInt8(11)] + Array("LENGTH-MARK".utf8)
        #expect(try crafted.replaceInRecords(marker, with: [0x7F] + Array("LENGTH-MARK".utf8)))
        try crafted.reattestSingleTransaction(with: pair.a.key)
        cases.append(
            ("value length past the records", crafted, { if case .record(.truncated, _) = $0 { true } else { false } }))

        for (what, bytes, expected) in cases {
            let path = pair.directory.file("damaged.tmb")
            try bytes.write(to: path)
            try ExchangeExpect.rejected(pair.b, what) {
                try pair.b.store.importBundle(at: path)
            } matches: {
                guard let inner = $0.bundleError else { return false }
                return expected(inner)
            }
        }
    }

    /// The bundle with its sender name's length (1 byte, for "a") replaced by the two-byte varint
    /// of 4095, past the end of the header payload; the header frame's length grows by one. Not re-signed.
    static func headerWithNameLengthPastTheEnd(_ original: BundleBytes) throws -> BundleBytes {
        let header = original.frames[0]
        #expect(original.bytes[header.payload.lowerBound + 1] == 1, "sender name 'a' is one byte long")
        var bytes = original.bytes
        bytes.replaceSubrange(header.payload.lowerBound + 1..<header.payload.lowerBound + 2, with: [0xFF, 0x1F])
        let length = header.payload.count + 1
        bytes.replaceSubrange(
            header.lengthField, with: (0..<4).map { UInt8(truncatingIfNeeded: length >> (24 - 8 * $0)) })
        return try BundleBytes(bytes)
    }

    /// A defect inside the header is reported at a byte offset of the file that lies within the
    /// header frame (BundleError: "every case names where … a byte offset in the file").
    @Test func headerDefectsNameAnOffsetInsideTheHeaderFrame() throws {
        let pair = try Pair()
        let original = try BundleBytes(contentsOf: try pair.bundle())
        let header = original.frames[0]
        var damages: [(String, BundleBytes)] = []
        var bytes = try Self.headerWithNameLengthPastTheEnd(original)
        damages.append(("name length", bytes))
        bytes = original
        bytes.bytes[header.payload.lowerBound + 2] = 0xFF  // sender name not UTF-8
        damages.append(("invalid UTF-8", bytes))
        for (what, var damaged) in damages {
            try damaged.resign(with: pair.a.key)
            let path = pair.directory.file("header.tmb")
            try damaged.write(to: path)
            let error = #expect(throws: ExchangeError.self) { try pair.b.store.importBundle(at: path) }
            guard case .framing(_, let offset)? = error?.bundleError else {
                Issue.record("\(what): \(String(describing: error))")
                continue
            }
            #expect(
                (header.start..<header.payload.upperBound).contains(offset),
                "\(what): offset \(offset) is outside the header frame \(header.start)..<\(header.payload.upperBound): \(error!)"
            )
        }
    }

    /// A bundle crafted with the codec at compression level 0, holding one transaction of `a` that
    /// inserts an `items` row named `name`; checked to be accepted as is by a replica like `b`.
    static func craftedBundle(_ pair: Pair, name: String) throws -> BundleBytes {
        let items = try #require(pair.b.store.trackedTable(named: "items"))
        let bytes = try BundleCrafter.bundle(
            key: pair.a.key, senderName: "a",
            tables: [BundleHeader.TableSchema(name: items.name, keyColumns: items.keyColumns, columns: items.columns)],
            transactions: [
                [
                    History.Change(
                        type: .insert, table: "items", key: [History.Column("id", .text("crafted"))],
                        values: [
                            History.Column("id", .text("crafted")), History.Column("name", .text(name)),
                            History.Column("qty", .integer(3)),
                            History.Column("price", .null), History.Column("photo", .null),
                            History.Column("note", .null),
                        ], generation: 1)
                ]
            ])
        return try BundleBytes(bytes)
    }

    @Test func theCraftingHelpersProduceBundlesThatAreAccepted() throws {
        let pair = try Pair()
        var crafted = try Self.craftedBundle(pair, name: "UTF8-MARK")
        // A same-length edit that keeps valid UTF-8, re-attested and re-signed: still accepted, so the
        // refusals below are due to the defect alone.
        #expect(try crafted.replaceInRecords(Array("UTF8".utf8), with: Array("utf8".utf8)))
        try crafted.reattestSingleTransaction(with: pair.a.key)
        let path = pair.directory.file("crafted.tmb")
        try crafted.write(to: path)
        #expect(try pair.b.store.importBundle(at: path).appliedTransactions == 1)
        let row = try pair.b.tables()["items"]?.rows.first { $0[0] == .text("crafted") }
        #expect(row?[1] == .text("utf8-MARK"))
    }

    @Test func invalidUTF8IsRefused() throws {
        let pair = try Pair()
        var cases: [(String, BundleBytes, (BundleError) -> Bool)] = []

        // In the header: the sender name.
        var header = try BundleBytes(contentsOf: try pair.bundle())
        let nameByte = header.frames[0].payload.lowerBound + 2
        #expect(header.bytes[nameByte] == UInt8(ascii: "a"))
        header.bytes[nameByte] = 0xFF
        try header.resign(with: pair.a.key)
        cases.append(
            (
                "sender name", header,
                { if case .framing(.badHeader("invalid UTF-8", .invalidUTF8), _) = $0 { true } else { false } }
            ))

        // In a record: a text value (a lone continuation byte and an overlong encoding).
        for (label, replacement) in [
            ("continuation", [0x80, 0x54, 0x46, 0x38]), ("overlong", [0xC0, 0xAF, 0x46, 0x38]),
        ] as [(String, [UInt8])] {
            var value = try Self.craftedBundle(pair, name: "UTF8-MARK")
            #expect(try value.replaceInRecords(Array("UTF8".utf8), with: replacement))
            try value.reattestSingleTransaction(with: pair.a.key)
            cases.append(
                ("text value (\(label))", value, { if case .record(.invalidUTF8, _) = $0 { true } else { false } }))
        }

        // In a record: the table name of a change.
        var table = try Self.craftedBundle(pair, name: "x")
        #expect(try table.replaceInRecords(Array("items".utf8), with: [0x69, 0x74, 0xED, 0xA0, 0x80]))
        try table.reattestSingleTransaction(with: pair.a.key)
        cases.append(
            ("table name (surrogate)", table, { if case .record(.invalidUTF8, _) = $0 { true } else { false } }))

        for (what, bytes, expected) in cases {
            let path = pair.directory.file("utf8.tmb")
            try bytes.write(to: path)
            try ExchangeExpect.rejected(pair.b, what) {
                try pair.b.store.importBundle(at: path)
            } matches: {
                guard let inner = $0.bundleError else { return false }
                return expected(inner)
            }
        }
    }

    // MARK: - Schema

    /// `a` has the given schema; `b` the standard one. `a` writes one row to every table it has.
    static func schemaMismatch(_ schema: String, inserts: String) throws -> (
        b: TestReplica, path: String, directory: TemporaryDirectory
    ) {
        // The caller keeps `directory`: the files go away with it.
        let directory = try TemporaryDirectory("tidemark-schema")
        let a = try TestReplica("a", in: directory, schema: schema, preserve: [])
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        _ = try a.store.execute(sql: inserts)
        _ = try b.store.execute(sql: "INSERT INTO items(id) VALUES ('b-1')")
        return (b, try a.export(to: directory.file("a.tmb")).path, directory)
    }

    @Test func aTableTheReceiverLacksIsRefused() throws {
        let (b, path, directory) = try Self.schemaMismatch(
            TestReplica.schema + "CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT);",
            inserts: "INSERT INTO items(id) VALUES ('i'); INSERT INTO notes VALUES ('n', 'note')")
        let error = try ExchangeExpect.rejected(b, "unknown table") {
            try b.store.importBundle(at: path)
        } matches: {
            $0 == .schemaMismatch(path: path, table: "notes", detail: "is not tracked here")
        }
        #expect(error?.description == "\(path): bundle is for a different schema: table 'notes' is not tracked here")
        #expect(error?.hint == "both replicas must track the same tables with the same columns")
        withExtendedLifetime(directory) {}
    }

    @Test func aColumnTheReceiverLacksIsRefused() throws {
        let (b, path, directory) = try Self.schemaMismatch(
            """
            CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, price REAL, photo BLOB, note, color TEXT);
            CREATE TABLE tags(item TEXT NOT NULL, tag TEXT NOT NULL, weight, PRIMARY KEY (item, tag)) WITHOUT ROWID;
            """, inserts: "INSERT INTO items(id, color) VALUES ('i', 'red')")
        try ExchangeExpect.rejected(b, "unknown column") {
            try b.store.importBundle(at: path)
        } matches: {
            guard case .schemaMismatch(path, "items", let detail) = $0 else { return false }
            return detail.contains("color")
        }
        withExtendedLifetime(directory) {}
    }

    @Test func differentKeyColumnsAreRefused() throws {
        let (b, path, directory) = try Self.schemaMismatch(
            """
            CREATE TABLE items(id TEXT NOT NULL, name TEXT PRIMARY KEY, qty INTEGER, price REAL, photo BLOB, note);
            CREATE TABLE tags(item TEXT NOT NULL, tag TEXT NOT NULL, weight, PRIMARY KEY (item, tag)) WITHOUT ROWID;
            """, inserts: "INSERT INTO items(id, name) VALUES ('i', 'n')")
        try ExchangeExpect.rejected(b, "other key") {
            try b.store.importBundle(at: path)
        } matches: {
            $0 == .schemaMismatch(path: path, table: "items", detail: "has key (id) here but (name) in the bundle")
        }
        withExtendedLifetime(directory) {}
    }

    @Test func aBundleForAnotherSchemaIsRefused() throws {
        let (b, path, directory) = try Self.schemaMismatch(
            "CREATE TABLE todos(id TEXT PRIMARY KEY, title TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);",
            inserts: "INSERT INTO todos(id, title) VALUES ('t', 'Buy milk')")
        try ExchangeExpect.rejected(b, "other schema") {
            try b.store.importBundle(at: path)
        } matches: {
            $0 == .schemaMismatch(path: path, table: "todos", detail: "is not tracked here")
        }
        withExtendedLifetime(directory) {}
    }

    // MARK: - Not a bundle

    @Test func filesThatAreNotBundlesAreRefused() async throws {
        let pair = try Pair()
        let directory = pair.directory
        try "hello, I am a text file\n".write(toFile: directory.file("text.txt"), atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: directory.file("empty.tmb"), contents: Data())
        try await SQLiteShell.execute(directory.file("other.sqlite"), "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        try Data(BundleFormat.magic).write(to: URL(fileURLWithPath: directory.file("magic-only.tmb")))
        // A text-mode transfer turns the magic's CR LF into LF: detected by the magic itself.
        var crlf = try [UInt8](Data(contentsOf: URL(fileURLWithPath: try pair.bundle())))
        crlf.remove(at: 4)
        try Data(crlf).write(to: URL(fileURLWithPath: directory.file("text-mode.tmb")))

        let cases: [(String, BundleError)] = [
            ("text.txt", .framing(.notABundle, offset: 0)),
            ("empty.tmb", .framing(.notABundle, offset: 0)),
            ("other.sqlite", .framing(.notABundle, offset: 0)),
            ("a.db", .framing(.notABundle, offset: 0)),
            ("a.db.key", .framing(.notABundle, offset: 0)),
            ("magic-only.tmb", .framing(.truncated, offset: 8)),
            ("text-mode.tmb", .framing(.notABundle, offset: 0)),
        ]
        for (name, expected) in cases {
            let path = directory.file(name)
            let error = try ExchangeExpect.rejected(pair.b, name) {
                try pair.b.store.importBundle(at: path)
            } matches: {
                $0 == .badBundle(path: path, expected)
            }
            #expect(
                error?.hint == "the file is damaged, incomplete or not from Tidemark; ask its sender to export it again"
            )
        }
        for (name, reason) in [("missing.tmb", "no such file"), ("", "is a folder")] {
            let path = name.isEmpty ? directory.path : directory.file(name)
            try ExchangeExpect.rejected(pair.b, "path \(path)") {
                try pair.b.store.importBundle(at: path)
            } matches: {
                $0 == .cannotRead(path: path, reason: reason)
            }
        }
    }

    // MARK: - Order and duplicates

    @Test func missingPrerequisitesAreRefusedUntilTheEarlierBundleIsImported() throws {
        let pair = try Pair()
        let exchange = pair.directory.file("exchange")
        try FileManager.default.createDirectory(atPath: exchange, withIntermediateDirectories: true)
        let first = try #require(try pair.a.store.push(to: exchange, key: pair.a.key).path)
        _ = try pair.a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-3', 'Three')")
        let second = try #require(try pair.a.store.push(to: exchange, key: pair.a.key).path)
        #expect(first.hasSuffix("/0000000001.tmb") && second.hasSuffix("/0000000002.tmb"))

        let error = try ExchangeExpect.rejected(pair.b, "bundle 2 before bundle 1") {
            try pair.b.store.importBundle(at: second)
        } matches: {
            if case .missingPrerequisites(second, _) = $0 { true } else { false }
        }
        #expect(error?.description == "\(second): missing prerequisites: a #1..#2")
        #expect(error?.hint == "import the bundles it depends on first (pull applies them in order)")

        #expect(try pair.b.store.importBundle(at: first).appliedTransactions == 2)
        #expect(try pair.b.store.importBundle(at: second).appliedTransactions == 1)
        let withoutB = try pair.b.tables().removing { $1.first == .text("b-1") }
        #expect(try pair.a.tables() == withoutB)
        #expect(try pair.b.transactions().filter { $0.origin == pair.a.id } == (try pair.a.transactions()))
    }

    @Test func importingTheSameBundleTwiceChangesNothing() throws {
        let pair = try Pair()
        let path = try pair.bundle()
        let first = try pair.b.store.importBundle(at: path)
        #expect(first.appliedTransactions == 2 && !first.alreadyApplied)
        let before = try pair.b.everything()
        let again = try pair.b.store.importBundle(at: path)
        #expect(again.alreadyApplied)
        #expect(again.appliedTransactions == 0 && again.appliedChanges == 0)
        #expect(again.skippedTransactions == 2)
        #expect(try pair.b.everything() == before)
    }

    @Test func aBundleSignedByThisReplicaIsAlreadyApplied() throws {
        let pair = try Pair()
        let path = try pair.bundle()
        let before = try pair.a.everything()
        let summary = try pair.a.store.importBundle(at: path)
        #expect(summary.alreadyApplied)
        #expect(summary.skippedTransactions == 2)
        let after = try pair.a.everything()
        // The history and the rows are untouched …
        let core = after.removing { table, _ in table == "tidemark_watermarks" }
            .differences(
                from: before.removing { table, _ in table == "tidemark_watermarks" }, mine: "after", theirs: "before")
        #expect(core.isEmpty, "\(core)")
        // … and nothing else changes either: not even a watermark of this replica about itself.
        let differences = after.differences(from: before, mine: "after", theirs: "before")
        #expect(differences.isEmpty, "importing its own bundle changed the store: \(differences)")
    }

    // MARK: - Restored stores

    /// `a` makes two transactions, is copied aside, makes a third; `b` receives all three. Returns
    /// the paths once both stores are closed.
    static func restoredStoreFixture() async throws -> (
        directory: TemporaryDirectory, a: String, old: String, own: String, relayed: String
    ) {
        let directory = try TemporaryDirectory("tidemark-restore")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try TestReplica.trustEachOther([a, b])
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-1')")
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-2')")
        let old = directory.file("a-old.db")
        try await SQLiteShell.execute(a.path, ".backup '\(old)'")
        _ = try a.store.execute(sql: "INSERT INTO items(id) VALUES ('a-3')")
        let own = try a.export(to: directory.file("own.tmb")).path
        _ = try b.store.importBundle(at: own)
        let relayed = try b.export(to: directory.file("relayed.tmb")).path
        return (directory, a.path, old, own, relayed)
    }

    @Test func aStoreRestoredFromAnOlderCopyRefusesItsOwnNewerTransactions() async throws {
        let fixture = try await Self.restoredStoreFixture()
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: fixture.a + suffix) }
        try FileManager.default.removeItem(atPath: fixture.a)
        try FileManager.default.copyItem(atPath: fixture.old, toPath: fixture.a)
        let a = try TestReplica(opening: fixture.a)
        #expect(try a.store.currentToken()[a.id] == 2)

        for path in [fixture.relayed, fixture.own] {
            let error = try ExchangeExpect.rejected(a, "restored store, \(path)") {
                try a.store.importBundle(at: path)
            } matches: {
                $0 == .restoredFromOlderCopy(path: path, have: 2, bundleHas: 3)
            }
            #expect(
                error?.description
                    == "\(path): holds this replica's transactions up to #3 but the store has only #2: the store was restored from an older copy"
            )
            #expect(error?.hint?.hasPrefix("continuing would reuse sequence numbers; move this store aside") == true)
        }
    }

    // MARK: - Key material

    @Test func errorsNeverContainKeyMaterial() throws {
        let pair = try Pair()
        let keyText = try String(contentsOfFile: pair.a.key.path, encoding: .utf8)
        let secrets = Self.secretFragments(keyText)
        var messages: [String] = []
        func collect(_ body: () throws -> Void) {
            do { try body() } catch let error as ExchangeError {
                messages.append(error.description + "\n" + (error.hint ?? ""))
            } catch let error as StoreError {
                messages.append(error.description + "\n" + (error.hint ?? ""))
            } catch { messages.append("\(error)") }
        }
        collect { _ = try pair.b.store.importBundle(at: pair.a.key.path) }
        collect { _ = try pair.b.export(to: pair.directory.file("x.tmb")) }  // fine: b's own key
        collect { _ = try pair.b.store.exportBundle(since: .zero, to: pair.directory.file("y.tmb"), key: pair.a.key) }
        collect { _ = try Store.inspectBundle(at: pair.a.key.path) { _, _ in } }
        // A damaged key file (its last base64 character changed) is refused without being quoted.
        let damaged = pair.directory.file("damaged.key")
        try String(keyText.dropLast(30) + "!" + keyText.suffix(29)).write(
            toFile: damaged, atomically: true, encoding: .utf8)
        collect { _ = try KeyFile.load(damaged) }
        collect { _ = try pair.a.store.push(to: pair.directory.path, key: try KeyFile.load(pair.b.key.path)) }
        #expect(messages.count == 5, "\(messages)")
        for message in messages {
            let leaked = secrets.filter { message.contains($0) }
            #expect(leaked.isEmpty, "key material in: \(message)")
        }
    }

    /// Overlapping 12-character pieces of a PEM key's base64 body, and the body itself.
    static func secretFragments(_ pem: String) -> [String] {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let characters = Array(body)
        // The first 22 characters encode the PKCS#8 prefix every Ed25519 key shares; the seed follows.
        return [body]
            + stride(from: 22, to: max(23, characters.count - 12), by: 4).map {
                String(characters[$0..<min(characters.count, $0 + 12)])
            }
    }
}
