import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Refusals that depend on the receiving store (its schema, what it holds already, an older copy
/// of it), files that are not bundles at all, and errors that never show key material.
extension BundleRejectionTests {
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
        let error = try ExchangeExpect.rejected(b, "unknown column") {
            try b.store.importBundle(at: path)
        } matches: {
            guard case .schemaMismatch(path, "items", let detail) = $0 else { return false }
            return detail.contains("color")
        }
        // The hint follows what the message says: a migration to make, not schemas to align.
        #expect(error?.description.contains("written after a migration this store has not made yet") == true)
        #expect(
            error?.hint?.hasPrefix("make that migration here too (Store.migrate), then pull or import the file again")
                == true)
        withExtendedLifetime(directory) {}
    }

    /// The header's tables are checked against every version's names before any change is read;
    /// each change is then checked against the version it was written under.
    @Test func aChangeNamingAColumnItsOwnVersionLacksIsRefused() throws {
        let directory = try TemporaryDirectory("tidemark-schema")
        let schema = "CREATE TABLE t(id TEXT PRIMARY KEY, alpha TEXT);"
        let a = try TestReplica("a", in: directory, schema: schema, preserve: [])
        let b = try TestReplica("b", in: directory, schema: schema, preserve: [])
        try b.trust(a)
        for replica in [a, b] { try replica.store.migrate(Store.Migration(sql: "ALTER TABLE t ADD COLUMN bravo TEXT")) }
        let lineage = try b.store.status().lineage
        #expect(lineage.count == 1)
        #expect(try a.store.status().lineage == lineage)
        let table = try #require(b.store.trackedTable(named: "t"))
        // One insert naming `bravo`, which the header declares, written under `position` (a header
        // carries the lineage up to the newest version its transactions need).
        func crafted(at position: Int) throws -> String {
            let bytes = try BundleCrafter.bundle(
                key: a.key, senderName: "a",
                tables: [BundleHeader.TableSchema(name: "t", keyColumns: table.keyColumns, columns: table.columns)],
                transactions: [
                    [
                        History.Change(
                            type: .insert, table: "t", key: [History.Column("id", .text("r"))],
                            values: [
                                History.Column("alpha", .text("x")), History.Column("bravo", .text("y")),
                                History.Column("id", .text("r")),
                            ], generation: 1)
                    ]
                ], lineage: Array(lineage.prefix(position)),
                schemaRuns: position == 0 ? [] : [BundleHeader.SchemaRun(origin: a.id, first: 1, position: position)])
            let path = directory.file("crafted-\(position).tmb")
            try BundleBytes(bytes).write(to: path)
            return path
        }
        let before = try crafted(at: 0)
        try ExchangeExpect.rejected(b, "a column the change's version lacks") {
            try b.store.importBundle(at: before)
        } matches: {
            $0
                == .schemaMismatch(
                    path: before, table: "t",
                    detail: "has no column 'bravo' under the schema version the change was written under")
        }
        // The same change written under the version that added the column applies.
        #expect(try b.store.importBundle(at: crafted(at: 1)).appliedTransactions == 1)
        #expect(try b.store.execute(sql: "SELECT alpha, bravo FROM t").0[0].rows == [[.text("x"), .text("y")]])
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
        try "hello, I am a text file\n".write(toFile: directory.file("text.txt"), atomically: false, encoding: .utf8)
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
            toFile: damaged, atomically: false, encoding: .utf8)
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
