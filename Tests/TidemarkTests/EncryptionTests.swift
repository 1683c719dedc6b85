import Crypto
import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// A group that encrypts its exchange (Protocol/encryption.md): members converge, the storage sees
/// no value or name, removed members read nothing new, and every bad file is refused with the store
/// unchanged.
@Suite struct EncryptionTests {
    /// Table and column names long enough that ciphertext never holds one by chance (a 3-letter
    /// name would turn up in about one run in a hundred).
    static let schema = """
        CREATE TABLE secret_notebook(notebook_id TEXT PRIMARY KEY, notebook_title TEXT, notebook_pages INTEGER, notebook_cover BLOB);
        CREATE TABLE secret_labels(label_item TEXT NOT NULL, label_text TEXT NOT NULL, label_weight, PRIMARY KEY (label_item, label_text)) WITHOUT ROWID;
        """

    /// What must never appear in an exchange file in clear: every table and column name of
    /// `schema`, and the marker every inserted value carries.
    static let secrets = [
        "secret_notebook", "notebook_id", "notebook_title", "notebook_pages", "notebook_cover", "secret_labels",
        "label_item", "label_text", "label_weight", "SECRET-",
    ]

    /// Writes `count` notebooks on `replica`, with values that carry `SECRET-`; updates and deletes some.
    static func write(_ replica: TestReplica, count: Int, using rng: inout SeededGenerator) throws {
        let prefix = "\(replica.name)-\(rng.next() % 1_000_000)"
        _ = try replica.store.write(author: "app", contextName: "insert") { db in
            for i in 0..<count {
                try db.execute(
                    sql:
                        "INSERT INTO secret_notebook(notebook_id, notebook_title, notebook_pages, notebook_cover) VALUES (?, ?, ?, ?)",
                    arguments: [
                        "\(prefix)-\(i)", "SECRET-title-\(prefix)-\(i)-\(rng.next() % 1000)", i,
                        Data("SECRET-cover-\(i)".utf8),
                    ])
                try db.execute(
                    sql:
                        "INSERT INTO secret_labels(label_item, label_text, label_weight) VALUES (?, 'SECRET-label', ?)",
                    arguments: ["\(prefix)-\(i)", i])
            }
        }
        _ = try replica.store.execute(
            sql:
                "UPDATE secret_notebook SET notebook_title = 'SECRET-updated' WHERE notebook_id LIKE '\(prefix)-%' AND notebook_pages % 3 = 0",
            author: "app")
        _ = try replica.store.execute(
            sql:
                "DELETE FROM secret_labels WHERE label_item = '\(prefix)-1'; DELETE FROM secret_notebook WHERE notebook_id = '\(prefix)-1'",
            author: "app")
    }

    /// Every file in the folder that holds one of `secrets` in clear, with the word.
    static func leaks(in group: ExchangeGroup) throws -> [String] {
        try group.files.flatMap { file -> [String] in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: group.folder + "/" + file))
            return secrets.filter { bytes.range(of: Data($0.utf8)) != nil }.map { "\(file): \($0)" }
        }
    }

    static func isEncrypted(_ path: String) throws -> Bool {
        try Data(contentsOf: URL(fileURLWithPath: path)).starts(with: Data("age-encryption.org/v1\n".utf8))
    }

    @Test func threeReplicasConvergeWithEncryptionOnAndTheFolderHoldsNoValueOrNameInClear() throws {
        let seed = SeededGenerator.seed()
        print("seed=\(seed) (replay: TIDEMARK_SEED=\(seed) swift test --filter EncryptionTests)")
        var rng = SeededGenerator(seed: seed)
        let group = try ExchangeGroup(
            ["a", "b", "c"], schema: Self.schema, preserve: ["secret_notebook.notebook_title"])
        // b writes before it hears of the setting: its clear bundle is encrypted in place on its next push.
        try Self.write(group["b"], count: 3, using: &rng)
        try group.push("b")
        #expect(try group.bundles.allSatisfy { try !Self.isEncrypted($0) })
        #expect(try group["a"].store.setEncryption(true) != nil)
        #expect(try group["a"].store.setEncryption(true) == nil, "setting it again changes nothing")
        try group.round()
        for round in 0..<6 {
            for replica in group.replicas where rng.next() % 3 != 0 {
                try Self.write(replica, count: Int(rng.next() % 8) + 2, using: &rng)
            }
            let order = group.names.shuffled(using: &rng)
            try group.round(order, prune: round % 2 == 1)
        }
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [], "seed \(seed)")
        #expect(try group.replicas.allSatisfy { try $0.store.encryption().isOn })
        #expect(try group["a"].tables()["secret_notebook"]!.rows.count > 10)
        for file in group.files {
            #expect(try Self.isEncrypted(group.folder + "/" + file), "\(file) is in clear")
        }
        #expect(try Self.leaks(in: group) == [], "seed \(seed)")
        // The exchange holds only what some member needs (every member applied every bundle).
        try group.round()
        #expect(try group.bundlesNeeded(by: group.names, key: group["a"].key).isEmpty)
    }

    @Test func aStoreFromBeforeEncryptionGainsTheSettingWhenItOpensAndEncrypts() async throws {
        let group = try ExchangeGroup(["a", "b"])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'old')")
        try group.round(prune: false)
        // What a store made before encryption lacks: the settings table, its tracking, the held flag.
        let old = try DatabaseQueue(path: a.path)
        try await old.write { db in
            let id = try #require(
                try Int64.fetchOne(db, sql: "SELECT id FROM tidemark_tables WHERE name = 'tidemark_settings'"))
            for trigger in try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'tidemark_settings'")
            {
                try db.execute(sql: "DROP TRIGGER \(trigger)")
            }
            try db.execute(sql: "DROP TABLE tidemark_rows_\(id)")
            try db.execute(sql: "DELETE FROM tidemark_tables WHERE id = \(id)")
            try db.execute(sql: "DROP TABLE tidemark_settings")
            try db.execute(
                sql: """
                    CREATE TABLE old_held(
                        digest BLOB PRIMARY KEY NOT NULL, position INTEGER NOT NULL, waiting_for BLOB NOT NULL,
                        change BLOB NOT NULL, sender TEXT NOT NULL, bundle BLOB NOT NULL) WITHOUT ROWID;
                    DROP TABLE tidemark_held;
                    ALTER TABLE old_held RENAME TO tidemark_held;
                    """)
        }
        try old.close()

        let reopened = try Store.open(a.path)
        #expect(try reopened.encryption().isOn == false)
        try reopened.setEncryption(true)
        _ = try reopened.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'SECRET-new')")
        let pushed = try #require(try reopened.push(to: group.folder, key: a.key).path)
        #expect(try Self.isEncrypted(pushed))
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.warnings == [])
        #expect(try group["b"].store.encryption().isOn)
        #expect(try group.tableDifferences() == [])
    }

    @Test func aSmallOrderKeyIsNotTrusted() throws {
        let group = try ExchangeGroup(["a"])
        // y = −1: a valid encoding of the Ed25519 point of order 2, which maps to X25519's u = 0.
        let point = Data([0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f]).base64EncodedString()
        #expect(throws: ExchangeError.invalidPeer("invalid public key: a small-order point, which no replica has")) {
            try group["a"].store.addPeer(name: "weak", publicKeyBase64: point)
        }
    }

    @Test func theSettingIsTheTransactionThatWroteIt() throws {
        let group = try ExchangeGroup(["a", "b"])
        let commit = try #require(try group["a"].store.setEncryption(true))
        let setting = try group["a"].store.encryption()
        #expect(setting.isOn)
        #expect(setting.madeBy?.origin == group["a"].id)
        #expect(setting.madeBy?.sequence == commit.sequence)
        #expect(try group["a"].store.fetchHistory().last?.contextName == "encryption")
    }

    @Test func aRemovedPeerCannotOpenWhatIsWrittenAfterItsRemoval() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        try group["a"].store.setEncryption(true)
        try group.round(prune: false)
        try group.round(prune: false)
        let before = try #require(group.bundles.first { $0.hasPrefix(group.folder(of: "a")) })
        #expect(try open(before, as: group["c"]) != nil, "c was a member when a wrote it")

        try group["a"].store.removePeer(name: "c")
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('after', 'SECRET-after')")
        let pushed = try #require(try group.push("a").path)
        #expect(try open(pushed, as: group["b"]) != nil)
        #expect(throws: ExchangeError.badEnvelope(path: pushed, .notARecipient(stanzas: 2))) {
            try open(pushed, as: group["c"])
        }
        let pull = try group.pull("c", prune: false)
        #expect(pull.warnings.contains { $0.contains(pushed) && $0.contains("encrypted for someone else") })
        #expect(
            try group["c"].store.execute(sql: "SELECT count(*) FROM items WHERE id = 'after'").0[0].rows[0][0]
                == .integer(0))
        #expect(try group.pull("b").imported.count == 1)
    }

    @Test func aNewMemberReadsFromItsJoiningSnapshotOn() throws {
        let group = try ExchangeGroup(["a", "b"])
        try group["a"].store.setEncryption(true)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'before n')")
        try group.round(prune: false)
        let old = try #require(group.bundles.first { $0.hasPrefix(group.folder(of: "a")) })

        let n = try TestReplica("n", in: group.directory)
        try group["a"].trust(n)
        let joining = group.directory.file("join.tms")
        _ = try group["a"].store.exportSnapshot(to: joining, key: group["a"].key, readableBy: n.id)
        #expect(throws: ExchangeError.badEnvelope(path: joining, .notARecipient(stanzas: 2))) {
            try Store.inspectBundle(at: joining, key: group["b"].key) { _, _ in }
        }
        let (sender, joined) = try n.store.join(from: joining, key: n.key)
        #expect(sender.name == "a" && joined.appliedChanges > 0)
        #expect(throws: ExchangeError.badEnvelope(path: old, .notARecipient(stanzas: 2))) {
            try Store.inspectBundle(at: old, key: n.key) { _, _ in }
        }
        // From the next file on, a encrypts for n too.
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'after n')")
        let next = try #require(try group.push("a").path)
        #expect(try open(next, as: n)?.senderName == "a")
        let pulled = try n.store.pull(from: group.folder, key: n.key, prune: false)
        #expect(pulled.imported.map(\.sender) == ["a"])
        #expect(pulled.warnings.allSatisfy { $0.contains("encrypted for someone else") }, "\(pulled.warnings)")
        #expect(try n.tables() == group["a"].tables())
    }

    /// With encryption on, the only snapshot (a's, written before d was trusted) cannot be opened
    /// by d. Once d's watermark shows it lacks what a pruned, a's next push writes a snapshot
    /// encrypted for d too, and d catches up from it; a second push writes none.
    @Test func aMemberTrustedAfterTheSnapshotWasWrittenGetsOneItCanOpen() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        try group["a"].store.setEncryption(true)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'before d')")
        try group.round()
        try group.round()
        #expect(group.bundles.isEmpty, "\(group.bundles)")
        #expect(group.snapshots == [group.folder(of: "a") + "/snapshot.tms"])

        let d = try group.add("d")
        let stuck = try group.pull("d")
        #expect(try d.tables()["items"]?.rows.isEmpty == true, "\(stuck.warnings)")
        _ = try group.pull("a")
        #expect(try group.push("a").snapshot == group.folder(of: "a") + "/snapshot.tms")
        #expect(try group.push("a").snapshot == nil)
        let pulled = try group.pull("d")
        #expect(pulled.imported.map(\.header.kind) == [.snapshot], "\(pulled.warnings)")
        #expect(try d.tables() == group["a"].tables())
    }

    /// A member trusted while the group's first bundles are still in the folder cannot open them
    /// (they were encrypted before): each writer's next push leaves it a snapshot it can open,
    /// once, and it follows the bundles written after.
    @Test func aMemberTrustedAfterBundlesItCannotOpenGetsASnapshotItCan() throws {
        let group = try ExchangeGroup(["a", "b"])
        try group["a"].store.setEncryption(true)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'before d')")
        _ = try group.push("a")
        _ = try group.pull("b")
        #expect(group.bundles.count == 1 && group.snapshots.isEmpty, "\(group.files)")

        let d = try group.add("d")
        let stuck = try group.pull("d")
        #expect(try d.tables()["items"]?.rows.isEmpty == true, "\(stuck.warnings)")
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'after d')")
        #expect(try group.push("a").snapshot == group.folder(of: "a") + "/snapshot.tms")
        _ = try group.pull("d")
        #expect(try d.tables() == group["a"].tables())
        #expect(try group.push("a").snapshot == nil)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-3', 'later')")
        _ = try group.push("a")
        _ = try group.pull("d")
        #expect(try d.tables() == group["a"].tables())
    }

    /// A member that only pulls once the group encrypts replaces what it wrote in clear before:
    /// its snapshot, which holds every row, included (encryption.md §4.4).
    @Test func aMemberThatOnlyPullsEncryptsWhatItWroteInClear() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        var rng = SeededGenerator(seed: 1)
        try Self.write(group["b"], count: 2, using: &rng)
        _ = try group.push("b")
        _ = try group.pull("a")
        _ = try group.pull("b")
        #expect(group.snapshots == [group.folder(of: "b") + "/snapshot.tms"], "\(group.files)")
        #expect(try !Self.leaks(in: group).isEmpty)

        try group["a"].store.setEncryption(true)
        _ = try group.push("a")
        _ = try group.pull("b")
        #expect(try group["b"].store.encryption().isOn)
        for file in group.files {
            #expect(try Self.isEncrypted(group.folder + "/" + file), "\(file) is in clear")
        }
        #expect(try Self.leaks(in: group) == [])
    }

    /// A new member writes and pushes before it has pulled anything, so before it can know that
    /// the group encrypts: the trusted peer's encrypted watermark tells it, and nothing it writes
    /// is in clear (encryption.md §4.5). Once it can open the group's files, it converges.
    @Test func aNewMemberThatPushesBeforeItPullsWritesNothingInClear() throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema, preserve: [])
        var rng = SeededGenerator(seed: 2)
        try group["a"].store.setEncryption(true)
        try Self.write(group["a"], count: 2, using: &rng)
        try group.round(prune: false)

        // Only a's bundle tells: e has no watermark of a's to look at yet.
        let e = try group.add("e", schema: Self.schema)
        _ = try group["a"].store.execute(sql: "INSERT INTO secret_notebook(notebook_id) VALUES ('a-late')")
        try FileManager.default.removeItem(atPath: group.folder(of: "a") + "/watermark.tmw")
        _ = try group.push("a")
        try Self.write(e, count: 1, using: &rng)
        _ = try group.push("e")
        #expect(try Self.leaks(in: group) == [])

        let d = try group.add("d", schema: Self.schema)
        try Self.write(d, count: 2, using: &rng)
        #expect(try group.push("d").path != nil)
        #expect(try Self.leaks(in: group) == [])
        _ = try group.pull("d")
        try Self.write(d, count: 1, using: &rng)
        _ = try group.push("d")
        #expect(try Self.leaks(in: group) == [])
        #expect(try d.store.encryption().isOn == false, "d has not learned the setting yet")
        #expect(try d.store.encryptsBeforeLearningTheSetting())
        for _ in 0..<4 { try group.round(prune: false) }
        #expect(try d.store.encryption().isOn)
        #expect(try !d.store.encryptsBeforeLearningTheSetting())
        #expect(try !group["a"].store.encryptsBeforeLearningTheSetting())
        #expect(try d.tables() == group["a"].tables())
        #expect(try group["b"].tables() == group["a"].tables())
        #expect(try e.tables() == group["a"].tables())
        #expect(try Self.leaks(in: group) == [])
    }

    /// A member trusted after the group turned encryption on and then off cannot open the bundles
    /// encrypted meanwhile: it gets a snapshot, as while the group encrypts (pruning.md §3.5).
    @Test func aMemberTrustedAfterEncryptionWasTurnedOffGetsASnapshotOfWhatItCannotOpen() throws {
        let group = try ExchangeGroup(["a", "b"])
        try group["a"].store.setEncryption(true)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'encrypted')")
        _ = try group.push("a")
        _ = try group.pull("b")
        try group["a"].store.setEncryption(false)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-2', 'in clear')")
        _ = try group.push("a")

        let c = try group.add("c")
        for _ in 0..<2 { try group.round() }
        #expect(try c.tables() == group["a"].tables())
        #expect(try c.tables()["items"]?.rows.count == 2)
        #expect(try group.tableDifferences() == [])
    }

    @Test func aFileInClearFromAMemberThatHadSeenTheSettingIsRefusedAsADowngrade() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        try group["a"].store.setEncryption(true)
        try group.round()
        _ = try group["b"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-1', 'SECRET-b')")
        let pushed = try #require(try group.push("b").path)
        let clear = group.directory.file("decrypted.tmb")
        try decrypt(pushed, as: group["c"], to: clear)

        let c = group["c"]
        let before = try StoreBytes(c.path)
        #expect(throws: ExchangeError.downgraded(path: clear, sender: "b")) {
            try c.store.importBundle(at: clear, key: c.key)
        }
        #expect(try StoreBytes(c.path) == before)
        // The encrypted original applies; its clear copy is still refused once nothing is left to apply.
        #expect(try c.store.importBundle(at: pushed, key: c.key).appliedTransactions == 1)
        #expect(throws: ExchangeError.downgraded(path: clear, sender: "b")) {
            try c.store.importBundle(at: clear, key: c.key)
        }
    }

    @Test func aBundleInClearThatTurnsEncryptionOffIsNotADowngrade() throws {
        let group = try ExchangeGroup(["a", "b"])
        try group["a"].store.setEncryption(true)
        try group.round()
        try group.round()
        try group["b"].store.setEncryption(false)
        _ = try group["b"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-1', 'in clear')")
        let pushed = try #require(try group.push("b").path)
        #expect(try !Self.isEncrypted(pushed))
        let pull = try group.pull("a")
        #expect(pull.warnings == [])
        #expect(try group["a"].store.encryption().isOn == false)
        #expect(try group.tableDifferences() == [])
    }

    @Test func anEncryptedBundleHeldForASchemaVersionAppliesOnceTheVersionIsMade() throws {
        let group = try ExchangeGroup(["a", "b"])
        try group["a"].store.setEncryption(true)
        try group.round()
        let migration = Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT")
        try group["a"].store.migrate(migration)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name, color) VALUES ('a-1', 'SECRET', 'red')")
        let pushed = try #require(try group.push("a").path)
        #expect(try Self.isEncrypted(pushed))
        let held = try group.pull("b", prune: false)
        #expect(held.warnings == [])
        #expect(held.waiting.count == 1)
        try group["b"].store.migrate(migration)
        let applied = try group.pull("b", prune: false)
        #expect(applied.warnings == [], "a held copy is not a downgrade")
        #expect(applied.imported.count == 1)
        #expect(try group.tableDifferences() == [])
    }

    @Test func aHeldBundleInClearThatTurnsEncryptionOffIsJudgedWhenItApplies() throws {
        let group = try ExchangeGroup(["a", "b"])
        try group["a"].store.setEncryption(true)
        try group.round(prune: false)
        try group.round(prune: false)
        let migration = Store.Migration(sql: "ALTER TABLE items ADD COLUMN color TEXT")
        try group["a"].store.migrate(migration)
        try group["a"].store.setEncryption(false)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name, color) VALUES ('a-1', 'clear', 'red')")
        let pushed = try #require(try group.push("a").path)
        #expect(try !Self.isEncrypted(pushed))
        let held = try group.pull("b", prune: false)
        #expect(held.warnings == [] && held.waiting.count == 1, "\(held.warnings)")
        try group["b"].store.migrate(migration)
        let applied = try group.pull("b", prune: false)
        #expect(applied.warnings == [], "it turns encryption off: no downgrade")
        #expect(try group["b"].store.encryption().isOn == false)
        #expect(try group.tableDifferences() == [])
    }

    @Test func badEncryptedFilesAreRefusedWithTheStoreUnchangedAndAPullGoesOnWithTheOthers() throws {
        let group = try ExchangeGroup(["a", "b", "c"])
        try group["a"].store.setEncryption(true)
        try group.round()
        // A value that does not compress, for several 64 KiB chunks that can be dropped and reordered.
        _ = try group["a"].store.execute(
            sql: "INSERT INTO items(id, name, photo) VALUES ('big', 'SECRET', randomblob(200000))")
        let pushed = try #require(try group.push("a").path)
        let sealed = try Array(Data(contentsOf: URL(fileURLWithPath: pushed)))
        let headerEnd = try #require(sealed.indices.first { i in sealed[i...].starts(with: Array("\n--- ".utf8)) })
        let payload = try #require(sealed[(headerEnd + 1)...].firstIndex(of: 0x0A)) + 1 + 16
        let chunk = 65_536 + 16
        try #require(sealed.count > payload + 3 * chunk)

        var reordered = Array(sealed[..<payload])
        reordered += sealed[(payload + chunk)..<(payload + 2 * chunk)] + sealed[payload..<(payload + chunk)]
        reordered += sealed[(payload + 2 * chunk)...]
        var flipped = sealed
        flipped[payload + 5] ^= 0x20
        let b = group["b"]
        // Encrypted for b, but the bundle inside is not a's: its signature fails.
        let clear = group.directory.file("inner.tmb")
        try decrypt(pushed, as: b, to: clear)
        var forged = try Array(Data(contentsOf: URL(fileURLWithPath: clear)))
        forged[forged.count - 10] ^= 0x01
        let stranger = try TestReplica("stranger", in: group.directory)
        let cases: [(String, [UInt8], (String) -> ExchangeError)] = [
            ("truncated", Array(sealed[..<(payload + chunk)]), { .badEnvelope(path: $0, .truncated(chunk: 1)) }),
            ("reordered", reordered, { .badEnvelope(path: $0, .damaged(chunk: 0)) }),
            ("altered", flipped, { .badEnvelope(path: $0, .damaged(chunk: 0)) }),
            (
                "cut", Array(sealed.dropLast(7)),
                { .badEnvelope(path: $0, .damaged(chunk: (sealed.count - payload) / chunk)) }
            ),
            (
                "for-others", try encrypt(forged, for: [stranger]),
                { .badEnvelope(path: $0, .notARecipient(stanzas: 1)) }
            ),
        ]
        let before = try StoreBytes(b.path)
        for (name, bytes, error) in cases {
            let path = group.directory.file("\(name).tmb")
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            #expect(throws: error(path), "\(name)") { try b.store.importBundle(at: path, key: b.key) }
            #expect(try StoreBytes(b.path) == before, "\(name)")
        }
        let badSignature = group.directory.file("bad-signature.tmb")
        _ = FileManager.default.createFile(atPath: badSignature, contents: Data(try encrypt(forged, for: [b])))
        #expect(throws: ExchangeError.self) { try b.store.importBundle(at: badSignature, key: b.key) }
        do {
            _ = try b.store.importBundle(at: badSignature, key: b.key)
        } catch let error as ExchangeError {
            guard case .badBundle = error else {
                Issue.record("expected a bad bundle, got \(error)")
                return
            }
        }
        #expect(throws: ExchangeError.encryptedWithoutKey(path: pushed)) { try b.store.importBundle(at: pushed) }
        #expect(throws: ExchangeError.wrongKey(path: stranger.key.path)) {
            try b.store.importBundle(at: pushed, key: stranger.key)
        }
        #expect(try StoreBytes(b.path) == before)

        // In the folder: the damaged copy is reported and skipped like any damaged file; the rest applies.
        let original = group.directory.file("original.tmb")
        try FileManager.default.moveItem(atPath: pushed, toPath: original)
        _ = FileManager.default.createFile(atPath: pushed, contents: Data(reordered))
        _ = try group["c"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('c-1', 'from c')")
        try group.push("c")
        let pull = try group.pull("b", prune: false)
        #expect(pull.warnings.count == 1)
        #expect(pull.warnings.first?.contains("fails authentication at chunk 0") == true, "\(pull.warnings)")
        #expect(pull.imported.map(\.sender) == ["c"])
        try FileManager.default.removeItem(atPath: pushed)
        try FileManager.default.moveItem(atPath: original, toPath: pushed)
        #expect(try group.pull("b", prune: false).warnings == [])
        #expect(try group.pull("a", prune: false).warnings == [])
        #expect(try group.tableDifferences(["a", "b"]) == [])
    }

    // MARK: - Helpers

    /// The bundle inside an encrypted file, opened with `replica`'s key; throws what the store would.
    @discardableResult
    func open(_ path: String, as replica: TestReplica) throws -> BundleHeader? {
        try Store.inspectBundle(at: path, key: replica.key) { _, _ in }.header
    }

    func decrypt(_ path: String, as replica: TestReplica, to clear: String) throws {
        var reader = try EnvelopeReader(
            BufferSource(Array(try Data(contentsOf: URL(fileURLWithPath: path)))),
            identity: replica.key.envelopeIdentity)
        var bytes: [UInt8] = []
        while true {
            let chunk = try reader.read(1 << 16)
            if chunk.isEmpty { break }
            bytes += chunk
        }
        _ = FileManager.default.createFile(atPath: clear, contents: Data(bytes))
    }

    func encrypt(_ bytes: [UInt8], for replicas: [TestReplica]) throws -> [UInt8] {
        var writer = try EnvelopeWriter(
            recipients: replicas.map { EnvelopeKeys.recipient(ofSigningKey: $0.store.publicKey)! })
        return writer.header + (try writer.encrypt(bytes)) + (try writer.finish())
    }
}
