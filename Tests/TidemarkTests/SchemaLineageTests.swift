import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkCore
import TidemarkTestSupport

/// Schema versions (Protocol/schema.md): the same migration makes the same version everywhere,
/// different migrations from one version are a fork refused on import with nothing changed, held
/// bundles survive the folder, and a store created from the newer schema takes the version on.
@Suite struct SchemaLineageTests {
    static let v1 = "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT);"
    static let addNote = Store.Migration(sql: "ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'none';")
    static let addMemo = Store.Migration(sql: "ALTER TABLE items ADD COLUMN memo TEXT;")

    @Test func theSameMigrationMakesTheSameVersionOnEveryReplica() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.v1, preserve: [])
        let a = try #require(try group["a"].store.migrate(Self.addNote).version)
        let b = try #require(try group["b"].store.migrate(Self.addNote).version)
        #expect(a == b && a.position == 1)
        #expect(a.change == Schema.Change([.addColumn(table: "items", column: "note")]))
        #expect(a.id == Schema.versionID(parent: Schema.initialID, change: a.change))
        // A migration that changes nothing that replicates makes no version.
        #expect(
            try group["a"].store.migrate(Store.Migration(sql: "CREATE INDEX items_by_name ON items(name);")).version
                == nil)
        #expect(try group["a"].store.status().lineage == [a])

        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('i1', 'one', 'n')")
        _ = try group.round(prune: false)
        #expect(try group.tableDifferences().isEmpty)
        let history = try group["b"].store.fetchHistory()
        #expect(history.map(\.schemaVersion) == [a], "the transaction records the version it was written under")
    }

    @Test func differentMigrationsFromOneVersionAreAForkAndNothingChanges() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.v1, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i1', 'one')")
        _ = try group.round(prune: false)
        let ours = try #require(try b.store.migrate(Self.addMemo).version)
        let theirs = try #require(try a.store.migrate(Self.addNote).version)
        _ = try a.store.execute(sql: "UPDATE items SET note = 'n' WHERE id = 'i1'")
        let bundle = try #require(try group.push("a").path)

        let before = try StoreSnapshot.everything(of: b.path)
        let bytesBefore = try Self.files(of: b.path)
        #expect(throws: ExchangeError.schemaFork(path: bundle, ours: ours, theirs: theirs)) {
            try b.store.importBundle(at: bundle)
        }
        #expect(try StoreSnapshot.everything(of: b.path) == before)
        #expect(try Self.files(of: b.path) == bytesBefore, "the store's files are unchanged, byte for byte")
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.warnings.count == 1, "\(pulled.warnings)")
        // Said with what to do: another pull alone does not clear it.
        #expect(pulled.warnings.first?.contains("schema lineage fork") == true, "\(pulled.warnings)")
        #expect(
            pulled.warnings.first?.hasSuffix(
                "; every replica must make the same migrations in the same order; "
                    + "a replica on the other branch can start again as a new store from the same app version and pull")
                == true)
        #expect(pulled.warnings.first?.contains("will retry") == false)
        #expect(try b.store.status().waiting.isEmpty, "a fork is refused, not held")
        // The pull remembers it for `status`, which otherwise shows nothing amiss.
        let fork = try #require(try b.store.status().forks.first)
        #expect(try b.store.status().forks.count == 1)
        #expect(fork.peer == a.store.replica.id && fork.ours == ours && fork.theirs == theirs)
        #expect(try b.store.schemaForks() == [fork])
        #expect(try group.pull("b", prune: false).warnings.count == 1, "said again on every pull")
        #expect(try b.store.schemaForks().map(\.peer) == [a.store.replica.id])
        try b.store.removePeer(name: "a")
        #expect(try b.store.status().forks.isEmpty, "a peer no longer trusted is not listed")
    }

    @Test func aHeldBundleIsKeptInTheStoreAndAppliedOnceTheStoreMigrates() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.v1, preserve: [])
        let (a, b) = (group["a"], group["b"])
        let version = try #require(try a.store.migrate(Self.addNote).version)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('i1', 'one', 'first')")
        let bundle = try #require(try group.push("a").path)

        let held = try b.store.importBundle(at: bundle)
        #expect(held.waitingFor == version && held.appliedTransactions == 0)
        #expect(try b.store.execute(sql: "SELECT count(*) FROM items").0[0].rows == [[.integer(0)]])
        #expect(try b.store.importBundle(at: bundle).waitingFor == version, "holding again changes nothing")
        #expect(try b.store.schemaWaits().map { [$0.version.position, $0.bundleCount] } == [[1, 1]])
        #expect(try b.store.schemaWaits().map(\.version) == [version])
        #expect(try b.store.schemaWaits().map(\.isMade) == [false])
        try FileManager.default.removeItem(atPath: bundle)

        try b.store.migrate(Self.addNote)
        #expect(try b.store.schemaWaits().map(\.isMade) == [true], "the next pull applies it")
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.warnings.isEmpty && pulled.waiting.isEmpty, "\(pulled)")
        #expect(pulled.imported.map(\.appliedTransactions) == [1])
        #expect(try b.store.execute(sql: "SELECT note FROM items").0[0].rows == [[.text("first")]])
        #expect(try b.store.schemaWaits().isEmpty)
    }

    /// A store that holds a bundle for a version refuses to make another version in its place; one
    /// that another client's change made all the same (adopted: it is made already) has forked:
    /// the held bundle is not said to apply with the next pull.
    @Test func aHeldBundleOfAVersionMadeOtherwiseHereIsForked() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.v1, preserve: [])
        let (a, b) = (group["a"], group["b"])
        try a.store.migrate(Self.addNote)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('i1', 'one', 'first')")
        let bundle = try #require(try group.push("a").path)
        _ = try b.store.importBundle(at: bundle)
        let addColor = "ALTER TABLE items ADD COLUMN color TEXT"
        #expect(throws: StoreError.self) { try b.store.migrate(Store.Migration(sql: addColor)) }
        try await DatabaseQueue(path: b.path).write { db in try db.execute(sql: addColor) }
        let reopened = try Store.open(b.path)
        #expect(reopened.adoptedSchemaChange?.version?.position == 1)
        let waits = try reopened.schemaWaits()
        #expect(waits.map(\.isMade) == [false])
        #expect(waits.map(\.isForked) == [true])
        // A pull says so of the folder's file, not of a copy of the held one under a name of its own.
        let pulled = try reopened.pull(from: group.folder, key: b.key, prune: false)
        #expect(pulled.warnings.count == 1 && pulled.warnings.allSatisfy { $0.contains("schema lineage fork") })
        #expect(!pulled.warnings.contains { $0.contains("tidemark-held") }, "\(pulled.warnings)")
    }

    /// A snapshot made under a version the store has not made is held like a change bundle, and
    /// the pull after the migration applies it, though the folder no longer has it: before, the
    /// pull took the held copy for a numbered bundle, refused it as not a change bundle on every
    /// pull, and the store went on waiting.
    @Test func aHeldSnapshotIsAppliedOnceTheStoreMigrates() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.v1, preserve: [])
        let (a, b) = (group["a"], group["b"])
        let version = try #require(try a.store.migrate(Self.addNote).version)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('i1', 'one', 'first')")
        let snapshot = group.directory.file("a.tms")
        _ = try a.store.exportSnapshot(to: snapshot, key: a.key)
        #expect(try b.store.importBundle(at: snapshot).waitingFor == version)
        try FileManager.default.removeItem(atPath: snapshot)

        try b.store.migrate(Self.addNote)
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.warnings.isEmpty && pulled.waiting.isEmpty, "\(pulled)")
        #expect(pulled.imported.map(\.header.kind) == [.snapshot])
        #expect(try b.store.execute(sql: "SELECT id, note FROM items").0[0].rows == [[.text("i1"), .text("first")]])
        #expect(try b.store.schemaWaits().isEmpty)
        #expect(try group.pull("b", prune: false).warnings.isEmpty)
        #expect(try group.tableDifferences().isEmpty)
    }

    @Test func aStoreCreatedFromTheNewerSchemaTakesTheVersionOn() async throws {
        let group = try ExchangeGroup(["a"], schema: Self.v1, preserve: [])
        let version = try #require(try group["a"].store.migrate(Self.addNote).version)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('i1', 'one', 'n')")
        try group.push("a")
        // A store on the initial schema holds the bundle.
        _ = try group.add("d")
        #expect(try group.pull("d", prune: false).waiting.map(\.version) == [version])

        // A device that installs the new release creates its store from the migrated schema.
        let e = try TestReplica(
            "e", in: group.directory,
            schema: "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, note TEXT DEFAULT 'none');", preserve: [])
        try e.store.addPeer(name: "a", publicKeyBase64: Data(group["a"].store.publicKey).base64EncodedString())
        let summary = try e.store.importBundle(at: try #require(group.bundles.first))
        #expect(summary.adoptedVersions == [version] && summary.appliedTransactions == 1, "\(summary)")
        #expect(try e.store.status().lineage == [version])
        #expect(try e.store.execute(sql: "SELECT note FROM items").0[0].rows == [[.text("n")]])
    }

    /// A store made from the app's newer schema, which lacks a column a version dropped, takes
    /// that version on and applies changes written before it: what they wrote to the dropped
    /// column stays in history, to relay, and reaches no row.
    @Test func aStoreCreatedWithoutADroppedColumnTakesTheDropOnAndAppliesChangesFromBeforeIt() async throws {
        // The widest table: history has no place yet for a slot past its columns.
        let group = try ExchangeGroup(
            ["a"], schema: "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, note TEXT);", preserve: [])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('i1', 'one', 1)")
        let version = try #require(
            try a.store.migrate(Store.Migration(sql: "ALTER TABLE items DROP COLUMN name")).version)
        _ = try a.store.execute(sql: "INSERT INTO items(id, qty) VALUES ('i2', 2)")
        try group.push("a")
        let e = try group.add("e", schema: "CREATE TABLE items(id TEXT PRIMARY KEY, qty INTEGER, note TEXT);")
        let pulled = try group.pull("e", prune: false)
        #expect(pulled.warnings.isEmpty && pulled.waiting.isEmpty, "\(pulled.warnings)")
        // Taken on before the files written before it apply.
        #expect(pulled.adoptedVersions == [version])
        #expect(
            try e.store.execute(sql: "SELECT id, qty FROM items ORDER BY id").0[0].rows == [
                [.text("i1"), .integer(1)], [.text("i2"), .integer(2)],
            ])
        #expect(try e.store.fetchHistory().flatMap(\.changes).count == 2)
        #expect(try group.tableDifferences().isEmpty)
    }

    /// A column dropped and added again under its name: a store that made neither migration has
    /// a column of that name, which holds the values from before the drop, not the new column's.
    /// It holds the bundles and names the migrations to make; once made, they apply.
    @Test func aColumnDroppedAndAddedAgainIsNotTakenForTheOneBeforeTheDrop() async throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.v1, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i1', 'before the drop')")
        try group.round(prune: false)
        let drop = Store.Migration(sql: "ALTER TABLE items DROP COLUMN name")
        let add = Store.Migration(sql: "ALTER TABLE items ADD COLUMN name TEXT")
        try a.store.migrate(drop)
        let version = try #require(try a.store.migrate(add).version)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('i2', 'after')")
        try group.push("a")
        let pulled = try group.pull("b", prune: false)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.waiting.map(\.version) == [version] && pulled.waiting.map(\.missingBefore) == [1])
        #expect(
            try b.store.execute(sql: "SELECT id, name FROM items").0[0].rows == [
                [.text("i1"), .text("before the drop")]
            ])
        try b.store.migrate(drop)
        try b.store.migrate(add)
        let applied = try group.pull("b", prune: false)
        #expect(applied.waiting.isEmpty && applied.warnings.isEmpty, "\(applied.warnings)")
        #expect(try group.tableDifferences().isEmpty)
        #expect(
            try b.store.execute(sql: "SELECT id, name FROM items ORDER BY id").0[0].rows == [
                [.text("i1"), .null], [.text("i2"), .text("after")],
            ])
    }

    /// The store file and its write-ahead log, as bytes.
    static func files(of path: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            files[suffix] = try Data(contentsOf: URL(fileURLWithPath: path + suffix))
        }
        return files
    }
}
