import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Seeded structured fuzzing of import: thousands of damaged variants of valid change, relayed,
/// snapshot and multi-frame bundles (`BundleMutator`), each of which must be refused with a typed
/// error by both import and inspect, leaving the receiving store byte for byte as it was.
///
/// The run prints its seed; `TIDEMARK_FUZZ_SEED=<seed>` replays it exactly, and
/// `TIDEMARK_FUZZ_MUTANTS=<n>` changes how many mutants it tries (default 3000).
@Suite struct BundleMutationFuzzTests {
    /// The bundles mutations start from, and a receiver `c` that trusts their senders and could
    /// import any one of them.
    struct Fixture {
        let directory: TemporaryDirectory
        let a: TestReplica
        let b: TestReplica
        let receiver: TestReplica
        let seeds: [BundleMutator.Seed]

        init(rng: inout SeededGenerator) throws {
            directory = try TemporaryDirectory("tidemark-mutation-fuzz")
            a = try TestReplica("a", in: directory)
            b = try TestReplica("b", in: directory)
            receiver = try TestReplica("c", in: directory)
            try b.trust(a)
            try receiver.trust(a, b)
            _ = try a.store.write(author: "a") { db in
                try db.execute(
                    sql:
                        "INSERT INTO items(id, name, qty, price, photo, note) VALUES ('a-1', 'One', 1, 1.5, x'00ff10', 'n'), ('a-2', 'Two', 2, NULL, NULL, 7)"
                )
                try db.execute(sql: "INSERT INTO tags VALUES ('a-1', 'red', 1), ('a-1', 'blue', 2.5)")
            }
            _ = try a.store.execute(
                sql: "UPDATE items SET price = 2.5, name = 'Uno' WHERE id = 'a-1'; DELETE FROM items WHERE id = 'a-2'")
            _ = try a.store.execute(sql: "DELETE FROM tags WHERE tag = 'blue'")
            let own = try a.export(to: directory.file("a.tmb")).path
            _ = try b.store.importBundle(at: own)
            _ = try b.store.execute(sql: "INSERT INTO items(id, name, photo) VALUES ('b-1', 'from b', zeroblob(300))")
            _ = try b.store.execute(sql: "UPDATE items SET qty = 9 WHERE id = 'a-1'")
            let relayed = try b.export(to: directory.file("relay.tmb")).path
            let snapshot = directory.file("b.tms")
            _ = try b.store.exportSnapshot(to: snapshot, key: b.key)
            _ = try receiver.store.execute(sql: "INSERT INTO items(id, name) VALUES ('c-1', 'the receiver''s own')")

            let crafted = try Self.craftedBundle(a)
            seeds = [
                try BundleMutator.Seed(name: "changes", bytes: try Self.read(own)),
                try BundleMutator.Seed(name: "relayed", bytes: try Self.read(relayed)),
                try BundleMutator.Seed(name: "snapshot", bytes: try Self.read(snapshot)),
                try BundleMutator.Seed(name: "stored", bytes: crafted.bytes),
                try BundleMutator.Seed(name: "multi-frame", bytes: try Self.reframed(crafted, key: a.key, rng: &rng)),
            ]
        }

        static func read(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

        /// Three transactions of `a` written at compression level 0, so their record bytes lie
        /// in the file as they are read: text, blob, integer and real values, an update, a delete.
        static func craftedBundle(_ a: TestReplica) throws -> BundleBytes {
            let items = try #require(a.store.trackedTable(named: "items"))
            func key(_ id: String) -> [History.Column] { [History.Column("id", .text(id))] }
            let row =
                key("x-1") + [
                    History.Column("name", .text("crafted")), History.Column("note", .blob([1, 2, 3])),
                    History.Column("photo", .blob([])),
                    History.Column("price", .real(-0.0)), History.Column("qty", .integer(Int64.min)),
                ]
            return try BundleBytes(
                BundleCrafter.bundle(
                    key: a.key, senderName: "a",
                    tables: [
                        BundleHeader.TableSchema(name: items.name, keyColumns: items.keyColumns, columns: items.columns)
                    ],
                    transactions: [
                        [History.Change(type: .insert, table: "items", key: key("x-1"), values: row, generation: 1)],
                        [
                            History.Change(
                                type: .update, table: "items", key: key("x-1"),
                                values: [History.Column("name", .text("é"))], generation: 1)
                        ],
                        [
                            History.Change(
                                type: .delete, table: "items", key: key("x-1"), values: [], tombstone: key("x-1"),
                                generation: 2)
                        ],
                    ]))
        }

        /// `bundle`'s record bytes split at random points across two to six uncompressed
        /// TRANSACTIONS frames (§3.2: records may span frames), signed again by `key`. The chains
        /// hash record bytes, not frames, so the attestations still hold.
        static func reframed(_ bundle: BundleBytes, key: KeyFile, rng: inout SeededGenerator) throws -> [UInt8] {
            let records = try bundle.storedRecords()
            let pieces = Int.random(in: 2...6, using: &rng)
            let cuts = (0..<pieces - 1).map { _ in Int.random(in: 1..<records.count, using: &rng) }
            let bounds = ([0] + Set(cuts).sorted() + [records.count])
            var bytes = Array(bundle.bytes[..<bundle.frames[1].start])
            for (from, to) in zip(bounds, bounds.dropFirst()) {
                let length = to - from
                bytes += [
                    BundleBytes.transactionsType, 0, UInt8(length >> 24), UInt8(length >> 16 & 0xFF),
                    UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
                ]
                bytes += records[from..<to]
            }
            let trailer = bundle.frames(ofType: BundleBytes.attestationType).first ?? bundle.frames.last!
            bytes += bundle.bytes[trailer.start...]
            var framed = try BundleBytes(bytes)
            try framed.resign(with: key)
            return framed.bytes
        }
    }

    /// What import refuses before it has verified a file: the only refusals a damaged file can
    /// meet, since any changed byte breaks the file signature (§5.1) and later checks never run.
    static func isRefusalOfUnverifiedFile(_ error: ExchangeError) -> Bool {
        switch error {
        case .badBundle, .unknownSigner, .unknownOrigin, .schemaMismatch, .notImportable: true
        default: false
        }
    }

    /// Which layer refused a mutant, for the report and the depth check.
    static func layer(_ error: ExchangeError) -> String {
        switch error.bundleError {
        case .framing(let framing, _):
            if case .badHeader = framing { return "header" }
            return "framing"
        case .record: return "record"
        case .verification(.badSignature): return "signature"
        case .verification: return "chain/attestation"
        case nil: return "import checks"
        }
    }

    // A hang guard, not a timing check: the limit counts from when the test is started, and the
    // rest of the suite runs beside it on two cores. 15 minutes, as the other hang guards allow.
    @Test(.timeLimit(.minutes(15))) func structuredMutantsAreRefusedAndLeaveTheStoreUntouched() throws {
        let seed = SeededGenerator.seed(environment: "TIDEMARK_FUZZ_SEED")
        let count = ProcessInfo.processInfo.environment["TIDEMARK_FUZZ_MUTANTS"].flatMap { Int($0) } ?? 3000
        print(
            "BundleMutationFuzzTests seed: 0x\(String(seed, radix: 16)) (replay with TIDEMARK_FUZZ_SEED=0x\(String(seed, radix: 16)))"
        )
        var rng = SeededGenerator(seed: seed)
        let fixture = try Fixture(rng: &rng)
        let receiver = fixture.receiver
        let mutator = BundleMutator(seeds: fixture.seeds)
        let originals = Set(fixture.seeds.map(\.bundle.bytes))
        // Left in place if the process dies: the mutant that crashed the decoder.
        let path = fixture.directory.file("mutant.tmb")
        print("BundleMutationFuzzTests: each mutant is written to \(path) before it is read")

        let reader = try StoreSnapshot.Reader(receiver.path)
        let before = try reader.everything()
        var kinds: [BundleMutator.Kind: Int] = [:]
        var layers: [String: Int] = [:]
        var identical = 0
        var failures: [String] = []
        let started = ContinuousClock.now
        for index in 0..<count {
            let mutant = mutator.mutant(using: &rng)
            kinds[mutant.kind, default: 0] += 1
            try Data(mutant.bytes).write(to: URL(fileURLWithPath: path))
            let label = "mutant \(index) [\(mutant.kind)] \(mutant.description)"
            if originals.contains(mutant.bytes) {
                // A mutation that changed nothing (a splice that rebuilt a seed): still a valid bundle.
                identical += 1
                do { _ = try Store.inspectBundle(at: path) { _, _ in } } catch {
                    failures.append("\(label): an unchanged bundle was refused: \(error)")
                }
                continue
            }
            do {
                _ = try receiver.store.importBundle(at: path)
                failures.append("\(label): import accepted it")
            } catch let error as ExchangeError {
                if Self.isRefusalOfUnverifiedFile(error) {
                    layers[Self.layer(error), default: 0] += 1
                } else {
                    failures.append("\(label): refused only after verification: \(error)")
                }
            } catch {
                failures.append("\(label): import threw \(type(of: error)), not an ExchangeError: \(error)")
            }
            // Inspect has no trust or schema check: the decoder and verifier alone must refuse it.
            do {
                _ = try Store.inspectBundle(at: path) { _, _ in }
                failures.append("\(label): inspect accepted it")
            } catch let error as ExchangeError {
                if error.bundleError == nil {
                    failures.append("\(label): inspect refused it without a BundleError: \(error)")
                }
            } catch {
                failures.append("\(label): inspect threw \(type(of: error)): \(error)")
            }
            let after = try reader.everything()
            if after != before {
                failures.append(
                    "\(label): the store changed: \(after.differences(from: before, mine: "after", theirs: "before").prefix(5))"
                )
                break
            }
            if failures.count >= 20 { break }
        }
        let elapsed = ContinuousClock.now - started
        print(
            "BundleMutationFuzzTests: \(count) mutants of \(fixture.seeds.count) seeds in \(elapsed), \(identical) unchanged; "
                + "by kind \(kinds.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }); "
                + "refused by \(layers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" })")
        #expect(failures.isEmpty, "seed 0x\(String(seed, radix: 16)):\n\(failures.joined(separator: "\n"))")
        #expect(try receiver.everything() == before)
        if count >= 1000 {
            #expect(Set(kinds.keys) == Set(BundleMutator.Kind.allCases), "every kind of mutation ran")
            // The mutants reach past the framing: every layer of the decoder refused some. (The
            // import's own checks of a header refuse none: a file they would refuse is read to its
            // end first, and a damaged one is refused for its damage.)
            for layer in ["framing", "header", "record", "signature", "chain/attestation"] {
                #expect(layers[layer, default: 0] > 0, "no mutant was refused by the \(layer) layer: \(layers)")
            }
        }
    }

    /// The seeds are genuine: each verifies, and a store like the receiver imports it and changes,
    /// so a mutant that left the receiver unchanged was refused, not ignored.
    @Test func everySeedIsAValidBundleTheReceiverWouldApply() throws {
        var rng = SeededGenerator(seed: 1)
        let fixture = try Fixture(rng: &rng)
        let byName = Dictionary(uniqueKeysWithValues: fixture.seeds.map { ($0.name, $0.bundle) })
        #expect(
            byName["relayed"]?.frames(ofType: BundleBytes.attestationType).count == 2,
            "the relayed seed has two origins")
        #expect(byName["snapshot"].map { $0.bytes[$0.headerPayload.lowerBound] } == BundleFormat.Kind.snapshot.rawValue)
        let spanned = byName["multi-frame"]?.frames(ofType: BundleBytes.transactionsType) ?? []
        #expect(
            spanned.count >= 2 && spanned.allSatisfy { $0.flags == 0 }, "the multi-frame seed spans uncompressed frames"
        )
        for name in ["stored", "multi-frame"] {
            #expect(
                fixture.seeds.first { $0.name == name }?.plainRecordRanges.isEmpty == false,
                "\(name): record bytes are editable")
        }
        for seed in fixture.seeds {
            let path = fixture.directory.file("\(seed.name).tmb")
            try seed.bundle.write(to: path)
            _ = try Store.inspectBundle(at: path) { _, _ in }
            let fresh = try TestReplica("fresh-\(seed.name)", in: fixture.directory)
            try fresh.trust(fixture.a, fixture.b)
            let before = try fresh.everything()
            let summary = try fresh.store.importBundle(at: path)
            #expect(!summary.alreadyApplied, "\(seed.name) applied nothing")
            #expect(try fresh.everything() != before, "\(seed.name) left the store unchanged")
        }
    }
}
