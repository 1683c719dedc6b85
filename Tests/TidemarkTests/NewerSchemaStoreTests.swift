import Foundation
import Testing
import Tidemark
import TidemarkCore
import TidemarkTestSupport

/// A store created from the app's newer schema (a device that installs a later release) that
/// writes before it has synced: its transactions are written to tables the group's versions
/// describe, and reach every member with every value, whether it pulls or pushes first
/// (Protocol/schema.md §5).
@Suite struct NewerSchemaStoreTests {
    static let v1 = "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT);"
    /// The group's migration: a column with a default, a rename, a new tracked table.
    static let v2 = Store.Migration(
        sql: """
            ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'none';
            ALTER TABLE items RENAME COLUMN name TO title;
            CREATE TABLE tags(id TEXT PRIMARY KEY, label TEXT);
            """, track: ["tags"])
    /// What the new release creates on a new device.
    static let newest = """
        CREATE TABLE items(id TEXT PRIMARY KEY, title TEXT, note TEXT DEFAULT 'none');
        CREATE TABLE tags(id TEXT PRIMARY KEY, label TEXT);
        """

    /// A group on v2 with one row written under each version, and a new store `n` created from
    /// the newest schema that has written a row to each table.
    static func group() throws -> (ExchangeGroup, Schema.Version) {
        let group = try ExchangeGroup(["a", "b"], schema: v1, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'under v1')")
        try group.round(prune: false)
        let version = try #require(try group["a"].store.migrate(v2).version)
        try group["b"].store.migrate(v2)
        _ = try group["a"].store.execute(
            sql: """
                INSERT INTO items(id, title, note) VALUES ('a2', 'under v2', 'from a');
                INSERT INTO tags VALUES ('t1', 'a');
                """)
        try group.round(prune: false)
        let n = try group.add("n", schema: newest)
        _ = try n.store.execute(
            sql: """
                INSERT INTO items(id, title, note) VALUES ('n1', 'new device', 'from n');
                INSERT INTO tags VALUES ('t2', 'n');
                UPDATE items SET note = 'seen by n' WHERE id = 'n1';
                """)
        return (group, version)
    }

    static func rows(_ replica: TestReplica) throws -> [[SQLValue]] {
        try replica.store.execute(sql: "SELECT id, title, note FROM items ORDER BY id").0[0].rows
            + replica.store.execute(sql: "SELECT id, label, NULL FROM tags ORDER BY id").0[0].rows
    }

    static let expected: [[SQLValue]] = [
        [.text("a1"), .text("under v1"), .text("none")],
        [.text("a2"), .text("under v2"), .text("from a")],
        [.text("n1"), .text("new device"), .text("seen by n")],
        [.text("t1"), .text("a"), .null],
        [.text("t2"), .text("n"), .null],
    ]

    @Test func writesBeforeTheFirstPullReachEveryMemberWhenItPullsFirst() throws {
        let (group, version) = try Self.group()
        let pulled = try group.pull("n", prune: false)
        #expect(pulled.warnings.isEmpty && pulled.waiting.isEmpty, "\(pulled.warnings)")
        #expect(try group["n"].store.status().lineage == [version], "\(pulled)")
        // Its own transactions read as written under the version it took on.
        let own = try group["n"].store.fetchHistory().filter { $0.origin == group["n"].id }
        #expect(own.count == 1 && own.allSatisfy { $0.schemaVersion == version })
        try group.push("n")
        for name in ["a", "b"] {
            let summary = try group.pull(name, prune: false)
            #expect(summary.warnings.isEmpty, "\(name): \(summary.warnings)")
        }
        #expect(try group.tableDifferences().isEmpty)
        for name in group.names { #expect(try Self.rows(group[name]) == Self.expected, "\(name)") }
    }

    /// The group renamed a column and later added a new one under its old name. A store created
    /// from that schema takes both versions on before it applies the files written before them,
    /// which name the renamed column by its old name: their values land in the renamed column,
    /// not in the new one.
    @Test func aNameAVersionGaveAnotherColumnTakesTheValuesOfTheColumnItNamedThen() throws {
        let group = try ExchangeGroup(["a"], schema: "CREATE TABLE t(id TEXT PRIMARY KEY, a TEXT);", preserve: [])
        let a = group["a"]
        _ = try a.store.execute(sql: "INSERT INTO t VALUES ('1', 'old a value')")
        try group.push("a")
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE t RENAME COLUMN a TO aa;"))
        try a.store.migrate(Store.Migration(sql: "ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'new-a';"))
        _ = try a.store.execute(sql: "INSERT INTO t VALUES ('2', 'A aa', 'A a')")
        try group.push("a")
        let d = try group.add("d", schema: "CREATE TABLE t(id TEXT PRIMARY KEY, aa TEXT, a TEXT DEFAULT 'new-a');")
        let pulled = try group.pull("d", prune: false)
        #expect(pulled.warnings.isEmpty && pulled.waiting.isEmpty, "\(pulled)")
        #expect(pulled.adoptedVersions.count == 2)
        #expect(try d.store.status().lineage.count == 2)
        let rows = "SELECT id, aa, a FROM t ORDER BY id"
        let expected: [[SQLValue]] = [
            [.text("1"), .text("old a value"), .text("new-a")], [.text("2"), .text("A aa"), .text("A a")],
        ]
        #expect(try d.store.execute(sql: rows).0[0].rows == expected)
        _ = try d.store.execute(sql: "INSERT INTO t VALUES ('d', 'D aa', 'D a')")
        try group.push("d")
        #expect(try group.pull("a", prune: false).warnings.isEmpty)
        #expect(try a.store.execute(sql: rows).0[0].rows == expected + [[.text("d"), .text("D aa"), .text("D a")]])
    }

    @Test func writesBeforeTheFirstPullReachEveryMemberWhenItPushesFirst() throws {
        let (group, version) = try Self.group()
        let pushed = try group.push("n")
        #expect(try group["n"].store.status().lineage == [version])
        let bundle = try #require(pushed.path)
        #expect(try ExchangeGroup.header(of: bundle).lineage == [version], "written under the group's version")
        for name in ["a", "b", "n"] {
            let summary = try group.pull(name, prune: false)
            #expect(summary.warnings.isEmpty && summary.waiting.isEmpty, "\(name): \(summary.warnings)")
        }
        #expect(try group.tableDifferences().isEmpty)
        for name in group.names { #expect(try Self.rows(group[name]) == Self.expected, "\(name)") }
    }

    /// The folder's files name versions this store cannot take on (its tables lack a column
    /// they add: an older release): it stays on its version, and its writes go out under it.
    @Test func aStoreOnAnOlderSchemaTakesNothingOnAndKeepsItsWritesFlowing() throws {
        let (group, version) = try Self.group()
        let old = try group.add("o")
        _ = try old.store.execute(sql: "INSERT INTO items(id, name) VALUES ('o1', 'old release')")
        let pushed = try group.push("o")
        #expect(try old.store.status().lineage.isEmpty)
        #expect(try ExchangeGroup.header(of: try #require(pushed.path)).lineage.isEmpty)
        let pulled = try group.pull("o", prune: false)
        #expect(pulled.waiting.map(\.version) == [version])
        for name in ["a", "b"] {
            let summary = try group.pull(name, prune: false)
            #expect(summary.warnings.isEmpty, "\(name): \(summary.warnings)")
            #expect(
                try group[name].store.execute(sql: "SELECT title, note FROM items WHERE id = 'o1'").0[0].rows == [
                    [.text("old release"), .text("none")]
                ])
        }
    }

    /// Bundles from before the version apply as they are (the store has every column they name);
    /// the first that needs the version takes it on, and what the store wrote before goes out
    /// under it.
    @Test func writesBeforeAnImportThatTakesTheVersionOnGoOutUnderIt() throws {
        let group = try ExchangeGroup(["a"], schema: Self.v1, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'under v1')")
        try group.push("a")
        let addNote = Store.Migration(sql: "ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'none'")
        let version = try #require(try group["a"].store.migrate(addNote).version)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('a2', 'under v2', 'from a')")
        try group.push("a")
        let n = try group.add(
            "n", schema: "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, note TEXT DEFAULT 'none');")
        _ = try n.store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('n1', 'new device', 'from n')")
        let pulled = try group.pull("n", prune: false)
        // Taken on from the folder before the first file applies.
        #expect(pulled.warnings.isEmpty && pulled.adoptedVersions == [version], "\(pulled)")
        #expect(pulled.imported.map(\.adoptedVersions) == [[], []], "\(pulled)")
        try group.push("n")
        let summary = try group.pull("a", prune: false)
        #expect(summary.warnings.isEmpty, "\(summary.warnings)")
        #expect(try group.tableDifferences().isEmpty)
        #expect(
            try group["a"].store.execute(sql: "SELECT note FROM items WHERE id = 'n1'").0[0].rows == [[.text("from n")]]
        )
    }

    /// Published before any file showed it the group's versions (to a folder of its own): its
    /// transaction was hashed under its initial schema, which it cannot relabel. Once it takes the
    /// versions on, that transaction names a table its initial schema (as the group defines it)
    /// does not track, and exports say so instead of writing a bundle no reader could apply.
    @Test func aTransactionPublishedUnderTheInitialSchemaIsAnErrorNotACrash() throws {
        let (group, version) = try Self.group()
        let n = group["n"]
        let alone = group.directory.file("alone")
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
        _ = try n.store.push(to: alone, key: n.key)
        _ = try group.pull("n", prune: false)
        #expect(try n.store.status().lineage == [version])
        #expect(throws: ExchangeError.unnamedHistory(origin: "n", sequence: 1, position: 0)) {
            try group.push("n")
        }
    }

    /// Transactions it published keep the version they went out under when it takes another on:
    /// a file holds them so, and every copy must say the same. (Published where no member's file
    /// could show it was ahead of the group.)
    @Test func publishedTransactionsKeepTheirVersion() throws {
        let group = try ExchangeGroup(["a"], schema: Self.v1, preserve: [])
        let v2 = try #require(try group["a"].store.migrate(Self.v2).version)
        _ = try group["a"].store.execute(sql: "INSERT INTO tags VALUES ('t1', 'a')")
        try group.push("a")
        let n = try group.add(
            "n", schema: Self.newest.replacingOccurrences(of: "label TEXT", with: "label TEXT, prio INTEGER"))
        _ = try n.store.execute(sql: "INSERT INTO items(id, title) VALUES ('n1', 'one')")
        _ = try n.store.execute(sql: "INSERT INTO items(id, title) VALUES ('n2', 'two')")
        _ = try group.pull("n", prune: false)
        let elsewhere = group.directory.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        _ = try n.store.push(to: elsewhere, key: n.key)
        let v3 = try #require(
            try group["a"].store.migrate(Store.Migration(sql: "ALTER TABLE tags ADD COLUMN prio INTEGER")).version)
        _ = try group["a"].store.execute(sql: "INSERT INTO tags VALUES ('t2', 'a', 1)")
        try group.push("a")
        #expect(try group.pull("n", prune: false).imported.flatMap(\.adoptedVersions) == [v3])
        let own = try n.store.fetchHistory().filter { $0.origin == n.id }
        #expect(own.map(\.schemaVersion) == [v2, v2])
        // A copy of them in the group's folder reads as the first did.
        let copy = try #require(try group.push("n").path)
        let header = try ExchangeGroup.header(of: copy)
        #expect([1, 2].map { header.schemaPosition(of: n.id, sequence: $0) } == [v2.position, v2.position])
        #expect(try group.pull("a", prune: false).warnings.isEmpty)
        #expect(try group.tableDifferences().isEmpty)
    }

    /// The same with a column the initial schema lacks: the export refuses rather than leave the
    /// column's value out (a copy without it would differ from the one published).
    @Test func aColumnPublishedUnderTheInitialSchemaIsAnErrorNotAValueLeftOut() throws {
        let group = try ExchangeGroup(["a"], schema: Self.v1, preserve: [])
        let addNote = Store.Migration(sql: "ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'none'")
        _ = try group["a"].store.migrate(addNote)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('a1', 'one', 'from a')")
        try group.push("a")
        let n = try group.add(
            "n", schema: "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, note TEXT DEFAULT 'none');")
        _ = try n.store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('n1', 'two', 'from n')")
        let alone = group.directory.file("alone")
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
        _ = try n.store.push(to: alone, key: n.key)
        _ = try group.pull("n", prune: false)
        #expect(throws: ExchangeError.unnamedHistory(origin: "n", sequence: 1, position: 0)) {
            try group.push("n")
        }
    }

    /// Created from a release the group has not reached: its writes name a column no member has,
    /// so its push publishes nothing and says why, until a member publishes that version; then
    /// they go out under it.
    @Test func aStoreAheadOfTheGroupWaitsForItsVersion() throws {
        let group = try ExchangeGroup(["a"], schema: Self.v1, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name) VALUES ('a1', 'one')")
        try group.push("a")
        let n = try group.add(
            "n", schema: "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, note TEXT DEFAULT 'none');")
        _ = try n.store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('n1', 'two', 'from n')")
        #expect(throws: ExchangeError.aheadOfGroup(path: group.folder, names: ["items.note"])) {
            try group.push("n")
        }
        #expect(!group.files.contains { $0.hasPrefix(n.id.description + "/") && $0.hasSuffix(".tmb") })
        #expect(try group.pull("n", prune: false).warnings.isEmpty)
        let addNote = Store.Migration(sql: "ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'none'")
        let version = try #require(try group["a"].store.migrate(addNote).version)
        _ = try group["a"].store.execute(sql: "INSERT INTO items(id, name, note) VALUES ('a2', 'three', 'from a')")
        try group.push("a")
        try group.push("n")
        #expect(try n.store.status().lineage == [version])
        for name in ["a", "n"] {
            #expect(try group.pull(name, prune: false).warnings.isEmpty, "\(name)")
        }
        #expect(try group.tableDifferences().isEmpty)
        #expect(
            try group["a"].store.execute(sql: "SELECT note FROM items WHERE id = 'n1'").0[0].rows == [[.text("from n")]]
        )
    }

    /// Created with a column no version of the group has ("satisfies" allows extra columns): it
    /// takes the group's versions on, and its push publishes nothing while the members' files at
    /// that version lack the column, naming it, rather than bundles every member would refuse.
    @Test func aColumnNoVersionHasIsNamedAndNothingIsPublished() throws {
        let group = try ExchangeGroup(["a"], schema: Self.v1, preserve: [])
        let version = try #require(try group["a"].store.migrate(Self.v2).version)
        _ = try group["a"].store.execute(sql: "INSERT INTO tags VALUES ('t1', 'a')")
        try group.push("a")
        let n = try group.add(
            "n", schema: Self.newest.replacingOccurrences(of: "label TEXT", with: "label TEXT, prio INTEGER"))
        _ = try n.store.execute(sql: "INSERT INTO tags VALUES ('t2', 'n', 1)")
        #expect(throws: ExchangeError.aheadOfGroup(path: group.folder, names: ["tags.prio"])) {
            try group.push("n")
        }
        #expect(try n.store.status().lineage == [version])
        #expect(!group.files.contains { $0.hasPrefix(n.id.description + "/") && $0.hasSuffix(".tmb") })
    }
}
