import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// What an app's foreign-key action changes as an import merges a parent row, in a row the
/// writer never saw, is recorded as the importing replica's own write (Protocol/merge.md §5.6):
/// every replica ends with it. Where the writer's transaction carried the same effect, nothing
/// more is recorded.
@Suite struct ActionEffectsTests {
    static let schema = """
        CREATE TABLE lists(id TEXT PRIMARY KEY, name TEXT);
        CREATE TABLE items(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id) ON DELETE CASCADE, title TEXT);
        CREATE TABLE notes(id TEXT PRIMARY KEY, list TEXT REFERENCES lists(id) ON DELETE SET NULL, body TEXT);
        """

    static func group() throws -> ExchangeGroup {
        let group = try ExchangeGroup(["a", "b"], schema: schema, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO lists VALUES ('l1', 'groceries')")
        try group.round(prune: false)
        return group
    }

    /// A deletes a list and inserts it again in one transaction; B adds an item to it meanwhile.
    /// The delete cascades into B's item on B only: recorded there, it reaches A too.
    @Test func aChildCascadedByADeleteAndInsertAgainIsRemovedEverywhere() throws {
        let group = try Self.group()
        _ = try group["a"].store.execute(
            sql: "DELETE FROM lists WHERE id = 'l1'; INSERT INTO lists VALUES ('l1', 'again')")
        _ = try group["b"].store.execute(sql: "INSERT INTO items VALUES ('i1', 'l1', 'milk')")
        for _ in 0..<2 { try group.round(prune: false) }
        #expect(try group.tableDifferences() == [])
        #expect(try group["a"].tables()["items"]?.rows == [])
        let listed = try group["b"].store.conflicts().map { "\($0.table) \($0.kind)" }
        #expect(listed == ["items removed"], "\(listed)")
        for name in group.names {
            #expect(try group[name].store.rowDigest().digest == (try group[name].tables().rowDigest), "\(name)")
        }
    }

    /// B pulls A's delete of a list before it publishes the note it added to it: `SET NULL`
    /// empties the note's list on B, and A, which applies the note after, ends the same.
    @Test func aChildSetToNullByAMergedDeleteIsSetToNullEverywhere() throws {
        let group = try Self.group()
        _ = try group["a"].store.execute(sql: "DELETE FROM lists WHERE id = 'l1'")
        try group.push("a")
        _ = try group["b"].store.execute(sql: "INSERT INTO notes VALUES ('n1', 'l1', 'remember')")
        try group.pull("b", prune: false)
        let pulled = try group.round(prune: false)
        let warnings = pulled.values.flatMap(\.warnings)
        #expect(warnings.isEmpty, "\(warnings)")
        #expect(try group.tableDifferences() == [])
        #expect(try group["a"].tables()["notes"]?.rows == [[.text("n1"), .null, .text("remember")]])
        let own = try group["b"].store.fetchHistory().filter { $0.origin == group["b"].id }
        #expect(own.map(\.contextName) == [nil, "action"])
        #expect(own.last?.changes.map(\.updatedColumns) == [["list"]])
    }

    /// A deletes a list whose item and note both replicas hold: A's transaction carries what its
    /// actions did, so B records nothing of its own and lists no conflict.
    @Test func anActionTheWriterCarriedIsNotRecordedAgain() throws {
        let group = try Self.group()
        _ = try group["a"].store.execute(
            sql: "INSERT INTO items VALUES ('i1', 'l1', 'milk'); INSERT INTO notes VALUES ('n1', 'l1', 'remember')")
        try group.round(prune: false)
        _ = try group["a"].store.execute(sql: "DELETE FROM lists WHERE id = 'l1'")
        try group.round(prune: false)
        #expect(try group.tableDifferences() == [])
        #expect(try group["b"].tables()["notes"]?.rows == [[.text("n1"), .null, .text("remember")]])
        #expect(try group["b"].store.fetchHistory().filter { $0.origin == group["b"].id }.isEmpty)
        #expect(try group["b"].store.conflicts().isEmpty)
    }

    /// A deletes a parent it holds no child of; B adds a child whose `ON DELETE SET NULL` column
    /// is NOT NULL. Merging the delete on B breaks that constraint through the action: the child
    /// is settled as a conflict, and the pull goes through.
    @Test func anActionThatBreaksAConstraintSettlesTheChild() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY);
                CREATE TABLE c(id TEXT PRIMARY KEY, pid TEXT NOT NULL REFERENCES p(id) ON DELETE SET NULL);
                """, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO p VALUES ('p1')")
        try group.round(prune: false)
        _ = try group["a"].store.execute(sql: "DELETE FROM p")
        _ = try group["b"].store.execute(sql: "INSERT INTO c VALUES ('c1', 'p1')")
        for _ in 0..<2 {
            let pulled = try group.round(prune: false)
            #expect(pulled.values.flatMap(\.warnings).isEmpty, "\(pulled.values.flatMap(\.warnings))")
        }
        #expect(try group.tableDifferences() == [])
        #expect(try group["b"].tables()["c"]?.rows == [])
        #expect(try group["b"].store.conflicts().map(\.kind) == ["foreign_key"])
    }
    /// A changes the column of a parent that its children reference (`ON UPDATE CASCADE`); B adds
    /// a child whose CHECK the cascaded value breaks. Merging the update on B settles that child,
    /// not the parent: the parent's update and its other children survive on every replica.
    @Test func anUpdateActionThatBreaksAChildsCheckSettlesTheChildNotTheParent() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY, code TEXT UNIQUE);
                CREATE TABLE c(
                    id TEXT PRIMARY KEY, code TEXT REFERENCES p(code) ON UPDATE CASCADE, kind TEXT,
                    CHECK (code <> 'bad' OR kind = 'any'));
                """, preserve: [])
        _ = try group["a"].store.execute(
            sql: "INSERT INTO p VALUES ('p1', 'ok'); INSERT INTO c VALUES ('c1', 'ok', 'any')")
        try group.round(prune: false)
        _ = try group["a"].store.execute(sql: "UPDATE p SET code = 'bad' WHERE id = 'p1'")
        _ = try group["b"].store.execute(sql: "INSERT INTO c VALUES ('c2', 'ok', 'strict')")
        for _ in 0..<2 {
            let pulled = try group.round(prune: false)
            #expect(pulled.values.flatMap(\.warnings).isEmpty, "\(pulled.values.flatMap(\.warnings))")
        }
        #expect(try group.tableDifferences() == [])
        #expect(try group["b"].tables()["p"]?.rows == [[.text("p1"), .text("bad")]])
        #expect(try group["b"].tables()["c"]?.rows == [[.text("c1"), .text("bad"), .text("any")]])
        let listed = try group["b"].store.conflicts().map { "\($0.table) \($0.key) \($0.kind)" }
        #expect(listed == [#"c {"id":"c2"} foreign_key"#], "\(listed)")
    }

    /// A and B give two parents the same referenced value (a UNIQUE clash). The parent that loses
    /// is system-deleted, and its delete's `SET NULL` reaches every child holding that value on
    /// the replica that settles it: recorded like a merge's action, the replicas end alike.
    @Test func anActionOfASystemDeleteIsRecordedToo() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY, code TEXT UNIQUE);
                CREATE TABLE c(id TEXT PRIMARY KEY, pcode TEXT REFERENCES p(code) ON UPDATE CASCADE ON DELETE SET NULL);
                """, preserve: [])
        _ = try group["a"].store.execute(
            sql: "INSERT INTO p VALUES ('p1', 'k1'), ('p2', 'k2'); INSERT INTO c VALUES ('c1', 'k1'), ('c2', 'k2')")
        try group.round(prune: false)
        _ = try group["a"].store.execute(sql: "UPDATE p SET code = 'kX' WHERE id = 'p1'")
        _ = try group["b"].store.execute(sql: "UPDATE p SET code = 'kX' WHERE id = 'p2'")
        for _ in 0..<3 {
            let pulled = try group.round(prune: false)
            #expect(pulled.values.flatMap(\.warnings).isEmpty, "\(pulled.values.flatMap(\.warnings))")
        }
        #expect(try group.tableDifferences() == [])
        #expect(try group["a"].tables()["p"]?.rows == [[.text("p1"), .text("kX")]])
        #expect(try group["a"].tables()["c"]?.rows.count == 2)
    }

    /// A deletes a parent, and its `SET DEFAULT` gives a child values that B's new row took
    /// meanwhile in a UNIQUE index. Each replica settles the clash by merge.md §5.1 (the row
    /// written later loses), in either order of the two writes: one of the rows stays, the same
    /// everywhere.
    @Test(arguments: [false, true])
    func aUniqueClashMadeByAnActionKeepsTheRowWrittenFirst(insertFirst: Bool) throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY, code TEXT UNIQUE);
                CREATE TABLE c(
                    id TEXT PRIMARY KEY, pcode TEXT DEFAULT 'dflt' REFERENCES p(code) ON DELETE SET DEFAULT, name TEXT,
                    UNIQUE(pcode, name));
                """, preserve: [])
        _ = try group["a"].store.execute(
            sql: "INSERT INTO p VALUES ('pd', 'dflt'), ('p3', 'old3'); INSERT INTO c VALUES ('e0', 'old3', 'x')")
        try group.round(prune: false)
        let delete = { _ = try group["a"].store.execute(sql: "DELETE FROM p WHERE id = 'p3'") }
        let insert = { _ = try group["b"].store.execute(sql: "INSERT INTO c VALUES ('d0', 'dflt', 'x')") }
        // Apart in time, so that the clocks order them as they ran (the same millisecond would
        // leave it to the replicas' ids).
        if insertFirst {
            try insert()
            Thread.sleep(forTimeInterval: 0.01)
            try delete()
        } else {
            try delete()
            Thread.sleep(forTimeInterval: 0.01)
            try insert()
        }
        for _ in 0..<3 {
            for name in ["b", "a"] {
                try group.push(name)
                _ = try group.pull(name, prune: false)
            }
        }
        #expect(try group.tableDifferences() == [])
        let kept = try group["a"].tables()["c"]?.rows.map { $0[0] }
        #expect(kept == [.text(insertFirst ? "d0" : "e0")], "\(String(describing: kept))")
    }

    /// A system delete that settles a UNIQUE clash between two parents sets its action off too:
    /// where a child's `SET NULL` breaks the child's CHECK, the child is settled first, and every
    /// later pull goes through (it failed on every attempt, the replica stuck for good).
    @Test func aSystemDeleteWhoseActionBreaksAConstraintSettlesTheChild() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY, code TEXT UNIQUE);
                CREATE TABLE c(
                    id TEXT PRIMARY KEY, pcode TEXT REFERENCES p(code) ON DELETE SET NULL, kind TEXT,
                    CHECK (kind <> 'bad' OR pcode IS NOT NULL));
                """, preserve: [])
        _ = try group["b"].store.execute(sql: "INSERT INTO p VALUES ('p3', 'k2')")
        // b's row is written first by its clock, which the clash rule compares (merge.md §5.1): in
        // the same millisecond the replicas' ids, made anew each run, would decide.
        Thread.sleep(forTimeInterval: 0.005)
        _ = try group["a"].store.execute(
            sql: "INSERT INTO p VALUES ('p2', 'k2'); INSERT INTO c VALUES ('c2', 'k2', 'bad')")
        for _ in 0..<3 {
            let pulled = try group.round(prune: false)
            #expect(pulled.values.flatMap(\.warnings).isEmpty, "\(pulled.values.flatMap(\.warnings))")
        }
        #expect(try group.tableDifferences() == [])
        #expect(try group["a"].tables()["p"]?.rows == [[.text("p3"), .text("k2")]])
    }
}

/// Children reached by foreign-key actions in less common shapes: a table with generated columns,
/// a child referencing its parent twice, and a cascade that reaches past the children a trial blames.
@Suite struct ActionEffectsShapeTests {
    /// As `aChildCascadedByADeleteAndInsertAgainIsRemovedEverywhere`, with items that carry
    /// generated columns, VIRTUAL and STORED, which SQLite's pre-update hook numbers apart from
    /// the tracked columns, in a rowid table and a WITHOUT ROWID one.
    @Test(arguments: ["", " WITHOUT ROWID"])
    func aChildWithGeneratedColumnsCascadedByADeleteIsRemovedEverywhere(_ kind: String) throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE lists(id TEXT PRIMARY KEY, name TEXT);
                CREATE TABLE items(
                    title TEXT, length INTEGER GENERATED ALWAYS AS (length(title)) VIRTUAL,
                    id TEXT PRIMARY KEY, upper TEXT AS (upper(title)) STORED,
                    list TEXT REFERENCES lists(id) ON DELETE CASCADE)\(kind);
                """, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO lists VALUES ('l1', 'groceries')")
        try group.round(prune: false)
        _ = try group["a"].store.execute(
            sql: "DELETE FROM lists WHERE id = 'l1'; INSERT INTO lists VALUES ('l1', 'again')")
        _ = try group["b"].store.execute(sql: "INSERT INTO items(title, id, list) VALUES ('milk', 'i1', 'l1')")
        for _ in 0..<2 { try group.round(prune: false) }
        #expect(try group.tableDifferences() == [])
        #expect(try group["a"].tables()["items"]?.rows == [])
        let listed = try group["b"].store.conflicts().map { "\($0.table) \($0.key) \($0.kind)" }
        #expect(listed == [#"items {"id":"i1"} removed"#], "\(listed)")
    }

    /// A child references its parent through two foreign keys whose `SET NULL` breaks its NOT NULL:
    /// it is settled once, with one delete in the resolution.
    @Test func aChildReachedThroughTwoKeysIsSettledOnce() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY);
                CREATE TABLE c(
                    id TEXT PRIMARY KEY, a TEXT NOT NULL REFERENCES p(id) ON DELETE SET NULL,
                    b TEXT NOT NULL REFERENCES p(id) ON DELETE SET NULL);
                """, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO p VALUES ('p1')")
        try group.round(prune: false)
        _ = try group["a"].store.execute(sql: "DELETE FROM p")
        _ = try group["b"].store.execute(sql: "INSERT INTO c VALUES ('c1', 'p1', 'p1')")
        for _ in 0..<2 { try group.round(prune: false) }
        #expect(try group.tableDifferences() == [])
        let resolutions = try group["b"].store.fetchHistory().filter {
            $0.origin == group["b"].id && $0.contextName == "conflict"
        }
        #expect(resolutions.flatMap(\.changes).map { "\($0.type) \($0.table)" } == ["delete c"])
        #expect(try group["b"].store.conflicts().map(\.kind) == ["foreign_key"])
    }

    /// A deletes a parent; B adds under it a child whose `SET NULL` breaks its NOT NULL, and an
    /// item that cascades into a tag whose `SET NULL` breaks its own. Settling the first child
    /// lets the delete reach the tag: that is settled in turn, and the pull goes through.
    @Test func aCascadeThatBreaksAGrandchildIsSettledAfterTheChild() throws {
        let group = try ExchangeGroup(
            ["a", "b"],
            schema: """
                CREATE TABLE p(id TEXT PRIMARY KEY);
                CREATE TABLE n(id TEXT PRIMARY KEY, pid TEXT NOT NULL REFERENCES p(id) ON DELETE SET NULL);
                CREATE TABLE items(id TEXT PRIMARY KEY, pid TEXT REFERENCES p(id) ON DELETE CASCADE);
                CREATE TABLE tags(id TEXT PRIMARY KEY, item TEXT NOT NULL REFERENCES items(id) ON DELETE SET NULL);
                """, preserve: [])
        _ = try group["a"].store.execute(sql: "INSERT INTO p VALUES ('P')")
        try group.round(prune: false)
        _ = try group["a"].store.execute(sql: "DELETE FROM p")
        _ = try group["b"].store.execute(
            sql:
                "INSERT INTO n VALUES ('n1', 'P'); INSERT INTO items VALUES ('i1', 'P'); INSERT INTO tags VALUES ('t1', 'i1')"
        )
        for _ in 0..<2 {
            let pulled = try group.round(prune: false)
            #expect(pulled.values.flatMap(\.warnings).isEmpty, "\(pulled.values.flatMap(\.warnings))")
        }
        #expect(try group.tableDifferences() == [])
        for table in ["p", "n", "items", "tags"] { #expect(try group["a"].tables()[table]?.rows == [], "\(table)") }
    }
}
