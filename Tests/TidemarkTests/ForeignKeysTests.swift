import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// Protocol/merge.md §5.3: a child whose parent is gone after an import follows its parent's
/// delete. `ForeignKeys` looks for such children among the rows an import wrote or removed and
/// their children only; these cases reach each way it looks: by the child's key, by the removed
/// parent's key through an index, by a scan where there is no index or too many rows, and down a
/// chain that a foreign-key action changed behind the merge.
@Suite struct ForeignKeysTests {
    static func schema(indexed: Bool) -> String {
        """
        CREATE TABLE lists(id TEXT PRIMARY KEY, title TEXT);
        CREATE TABLE entries(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id) ON DELETE CASCADE, body TEXT);
        CREATE TABLE notes(id TEXT PRIMARY KEY, entry TEXT REFERENCES entries(id), text TEXT);
        """ + (indexed ? "CREATE INDEX entries_list ON entries(list); CREATE INDEX notes_entry ON notes(entry);" : "")
    }

    /// Both replicas' rows of `table`, after rounds until quiet, checked equal.
    static func converged(_ group: ExchangeGroup, _ table: String) throws -> [[SQLValue]] {
        try group.round()
        try group.round()
        #expect(try group.tableDifferences() == [])
        for replica in group.replicas {
            #expect(try replica.store.rowDigest().digest == (try replica.tables().rowDigest), "\(replica.name)")
        }
        return try group["a"].tables()[table]?.rows ?? []
    }

    /// b adds a note to an entry while a deletes the entry's list: on a the note arrives without
    /// its entry (found by its own key); on b the list's delete cascades to the entry behind the
    /// merge, and the note is found under the entry the cascade removed.
    @Test(arguments: [false, true])
    func aNoteUnderAnEntryWhoseListWentIsSettledOnBoth(indexed: Bool) throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema(indexed: indexed), preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(
            sql: "INSERT INTO lists VALUES ('l', 'groceries'); INSERT INTO entries VALUES ('e', 'l', 'milk')")
        try group.round()
        _ = try b.store.execute(sql: "INSERT INTO notes VALUES ('n', 'e', 'skimmed')")
        _ = try a.store.execute(sql: "DELETE FROM lists WHERE id = 'l'")
        #expect(try Self.converged(group, "notes") == [])
        #expect(try Self.converged(group, "entries") == [])
        for replica in [a, b] {
            #expect(try replica.store.conflicts().contains { $0.table == "notes" && $0.row.contains("skimmed") })
        }
    }

    /// b adds entries to a list a deletes: on b the delete removes the list and cascades, the
    /// entries merged from nowhere; on a the entries arrive without their list. With more entries
    /// than are looked for one by one, the table is looked at whole.
    @Test(arguments: [3, TouchedRows.limit + 10])
    func entriesAddedToADeletedListAreSettled(count: Int) throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema(indexed: true), preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO lists VALUES ('l', 'groceries'), ('k', 'kept')")
        try group.round()
        _ = try b.store.execute(
            sql: """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
                INSERT INTO entries SELECT 'e' || i, CASE WHEN i % 2 = 0 THEN 'l' ELSE 'k' END, 'x' FROM n;
                """)
        _ = try a.store.execute(sql: "DELETE FROM lists WHERE id = 'l'")
        let entries = try Self.converged(group, "entries")
        #expect(entries.count == (count + 1) / 2)
        #expect(entries.allSatisfy { $0[1] == .text("k") })
    }

    /// b adds a note to an entry that a deletes (no action on notes): on b the entry's delete
    /// leaves the note without its entry, found by the removed entry's key (through the index, or
    /// by a scan without one); on a the note arrives without its entry.
    @Test(arguments: [false, true])
    func aNoteUnderADeletedEntryIsSettledOnBoth(indexed: Bool) throws {
        let group = try ExchangeGroup(["a", "b"], schema: Self.schema(indexed: indexed), preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(
            sql:
                "INSERT INTO lists VALUES ('l', 'groceries'); INSERT INTO entries VALUES ('e', 'l', 'milk'), ('f', 'l', 'tea')"
        )
        try group.round()
        _ = try b.store.execute(sql: "INSERT INTO notes VALUES ('n', 'e', 'skimmed'), ('m', 'f', 'green')")
        _ = try a.store.execute(sql: "DELETE FROM entries WHERE id = 'e'")
        #expect(try Self.converged(group, "notes") == [[.text("m"), .text("f"), .text("green")]])
        for replica in [a, b] {
            #expect(try replica.store.conflicts().contains { $0.table == "notes" && $0.row.contains("skimmed") })
        }
    }

    /// Tracked `p` and `t`, between them untracked `u` (`ON DELETE CASCADE` to `p`), `t`
    /// referencing `u` with `action`. Each replica holds its own row `u9` under another parent,
    /// a's `t9` references it, and a deletes `p1`, which only b's `u9` is under: on b the delete
    /// cascades into `u`, behind the merge, and from there into `t`. Returns the group, a's delete
    /// not yet sent.
    static func untrackedChain(action: String) throws -> ExchangeGroup {
        let schema = """
            CREATE TABLE p(id TEXT PRIMARY KEY, name TEXT);
            CREATE TABLE u(id TEXT PRIMARY KEY, pid TEXT REFERENCES p(id) ON DELETE CASCADE);
            CREATE TABLE t(id TEXT PRIMARY KEY, uid TEXT REFERENCES u(id) \(action), v TEXT);
            """
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        for replica in [a, b] { _ = try replica.store.migrate(Store.Migration(untrack: ["u"])) }
        _ = try a.store.execute(sql: "INSERT INTO p VALUES ('p1', 'one'), ('p2', 'two')")
        try group.round()
        _ = try a.store.execute(sql: "INSERT INTO u VALUES ('u9', 'p2')")
        _ = try b.store.execute(sql: "INSERT INTO u VALUES ('u9', 'p1')")
        _ = try a.store.execute(sql: "INSERT INTO t VALUES ('t9', 'u9', 'tracked')")
        try group.round()
        _ = try a.store.execute(sql: "DELETE FROM p WHERE id = 'p1'")
        return group
    }

    /// With no action on `t`, the cascade leaves b's `t9` without its parent: found, though no
    /// tracked row the merge wrote names it.
    @Test func anOrphanLeftThroughAnUntrackedTableIsSettled() throws {
        let group = try Self.untrackedChain(action: "")
        #expect(try Self.converged(group, "t") == [])
        #expect(try group["b"].store.conflicts().contains { $0.table == "t" && $0.kind == "foreign_key" })
    }

    /// A chain of 30 rows, each referencing the one before, added under a row another replica
    /// deleted: each pass finds one level of orphans, and every level is settled, however deep.
    @Test func aDeepChainUnderADeletedRowIsSettledWhole() throws {
        let schema =
            "CREATE TABLE n(id TEXT PRIMARY KEY, parent TEXT REFERENCES n(id)); CREATE INDEX n_parent ON n(parent);"
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        let (a, b) = (group["a"], group["b"])
        _ = try a.store.execute(sql: "INSERT INTO n VALUES ('n0', NULL)")
        try group.round()
        _ = try a.store.execute(
            sql: (1...30).map { "INSERT INTO n VALUES ('n\($0)', 'n\($0 - 1)');" }.joined())
        _ = try b.store.execute(sql: "DELETE FROM n WHERE id = 'n0'")
        #expect(try Self.converged(group, "n") == [])
        #expect(try b.store.conflicts().count == 30)
    }
}
