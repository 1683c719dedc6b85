import Foundation
import Tidemark

/// The embedded default job: three replicas that never share a server sync a to-do list through
/// one folder, then check that they hold the same rows.
struct DemoScenario {
    let directory: String
    let say: (String) -> Void

    static let schema = """
        CREATE TABLE todos(
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            done INTEGER NOT NULL DEFAULT 0,
            owner TEXT
        );
        CREATE TABLE tags(
            todo TEXT NOT NULL,
            tag TEXT NOT NULL,
            PRIMARY KEY (todo, tag)
        ) WITHOUT ROWID;
        """

    struct Member {
        let name: String
        let store: Store
        let key: KeyFile
    }

    /// Runs the scenario; returns whether every replica ended with the same rows. Long by design:
    /// it is the demo's script, step after step, as the README tells it.
    func run() throws -> Bool {
        let exchange = directory + "/exchange"
        try FileManager.default.createDirectory(atPath: exchange, withIntermediateDirectories: true)
        say("folder    \(exchange)")
        var members: [Member] = []
        for name in ["alice", "bob", "carol"] {
            let path = directory + "/\(name).db"
            let (store, _) = try Store.initialize(
                path,
                setup: Store.Setup(replicaName: name, schema: ("demo schema", Self.schema), preserve: ["todos.title"]))
            members.append(Member(name: name, store: store, key: try KeyFile.load(KeyFile.defaultPath(forStore: path))))
            say("init      \(name) \(store.replica.id)")
        }
        for member in members {
            for other in members where other.name != member.name {
                try member.store.addPeer(
                    name: other.name, publicKeyBase64: Data(other.store.publicKey).base64EncodedString())
            }
        }
        say("trust     each replica trusts the other two")

        let (alice, bob, carol) = (members[0].store, members[1].store, members[2].store)
        _ = try alice.execute(
            sql: """
                INSERT INTO todos(id, title, owner) VALUES ('a-1', 'Buy milk', 'alice'), ('a-2', 'Call the plumber', 'alice');
                INSERT INTO tags VALUES ('a-1', 'shopping');
                """, author: "alice", contextName: "demo")
        _ = try bob.write(author: "bob", contextName: "demo") { db in
            try db.execute(sql: "INSERT INTO todos(id, title, owner) VALUES ('b-1', 'Water the plants', 'bob')")
            try db.execute(sql: "INSERT INTO tags VALUES ('b-1', 'home')")
        }
        _ = try carol.execute(
            sql:
                "INSERT INTO todos(id, title, owner) VALUES ('c-1', 'Book flights', 'carol'), ('c-2', 'Renew passport', 'carol')",
            author: "carol")
        say("write     alice +2 todos, bob +1, carol +2")

        // Round 1: alice and bob exchange, then carol pushes and pulls (learning alice's writes from bob's relay too).
        try round(members, order: [0, 1, 2, 0, 1, 2])
        _ = try alice.execute(sql: "UPDATE todos SET done = 1 WHERE id = 'b-1'", author: "alice")
        _ = try bob.execute(
            sql: "DELETE FROM todos WHERE id = 'c-2'; DELETE FROM tags WHERE todo = 'c-2'", author: "bob")
        _ = try carol.execute(
            sql: "UPDATE todos SET title = 'Buy oat milk' WHERE id = 'a-1'; INSERT INTO tags VALUES ('c-1', 'travel')",
            author: "carol")
        say("write     alice marks b-1 done, bob deletes c-2, carol renames a-1 and tags c-1")
        try round(members, order: [2, 0, 1, 2, 0, 1])

        var snapshots: [String] = []
        for member in members {
            let rows = try member.store.execute(
                sql: "SELECT * FROM todos ORDER BY id; SELECT * FROM tags ORDER BY todo, tag"
            ).0
            let text = rows.map { $0.rows.map { $0.map(\.description).joined(separator: "|") }.joined(separator: "\n") }
                .joined(separator: "\n--\n")
            snapshots.append(text)
            let count = rows.map(\.rows.count).reduce(0, +)
            say(
                "check     \(member.name): \(rows[0].rows.count) todos, \(rows[1].rows.count) tags (\(count) rows), history \(try member.store.status().transactionCount) transactions"
            )
        }
        let same = Set(snapshots).count == 1
        if same {
            say(
                "todos     "
                    + (try alice.execute(
                        sql:
                            "SELECT id || ' ' || title || (CASE done WHEN 1 THEN ' [done]' ELSE '' END) FROM todos ORDER BY id"
                    ).0[0]
                        .rows.map { $0[0].description.trimmingCharacters(in: CharacterSet(charactersIn: "'")) }.joined(
                            separator: "; ")))
            say("ok        all 3 replicas hold the same rows")
        } else {
            say("FAILED    the replicas differ")
        }
        return same
    }

    /// Each listed member pushes then pulls, in order.
    private func round(_ members: [Member], order: [Int]) throws {
        let exchange = directory + "/exchange"
        for index in order {
            let member = members[index]
            let pushed = try member.store.push(to: exchange, key: member.key)
            let pulled = try member.store.pull(from: exchange, key: member.key)
            for warning in pulled.warnings { say("warning   \(member.name): \(warning)") }
            let applied = pulled.imported.map(\.appliedTransactions).reduce(0, +)
            say(
                "sync      \(member.name): pushed \(pushed.export?.transactionCount ?? 0) transactions, pulled \(applied)"
            )
        }
    }
}
