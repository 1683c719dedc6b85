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

    /// A header altered on the way (a table renamed) is refused as the damage it is — a record
    /// naming a table the header no longer holds, or the signature — not for what the altered
    /// header says (another schema). The store is left unchanged.
    @Test func anAlteredHeaderIsRefusedAsDamageNotForWhatItSays() throws {
        let pair = try Pair()
        let path = try pair.bundle()
        let original = try BundleBytes(contentsOf: path)
        let before = try pair.b.everything()
        for (from, to) in [("items", "itdms"), ("tidemark_settings", "tidemark_rettings")] {
            var altered = original
            let name = Array(from.utf8)
            let at = try #require(
                (0...(altered.bytes.count - name.count)).first { Array(altered.bytes[$0..<$0 + name.count]) == name })
            altered.bytes.replaceSubrange(at..<at + name.count, with: Array(to.utf8))
            try altered.write(to: path)
            try ExchangeExpect.rejected(pair.b, "a header naming \(to)") {
                try pair.b.store.importBundle(at: path)
            } matches: {
                guard case .badBundle(path, _) = $0 else { return false }
                return true
            }
            #expect(try pair.b.everything() == before)
        }
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

        // In a record: a text value (a lone continuation byte and an overlong encoding), the bad
        // bytes first, then past the first eight bytes, then in the last few (the decoder checks
        // text eight bytes at a time, then byte by byte).
        for (label, text, replacement) in [
            ("continuation", "UTF8", [0x80, 0x54, 0x46, 0x38]), ("overlong", "UTF8", [0xC0, 0xAF, 0x46, 0x38]),
            ("continuation, second word", "12345678UTF8-MARK", [0x80, 0x54, 0x46, 0x38]),
            ("overlong, in the tail", "1234567812345678UTF8", [0x54, 0x46, 0xC0, 0xAF]),
        ] as [(String, String, [UInt8])] {
            var value = try Self.craftedBundle(pair, name: text)
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
}
