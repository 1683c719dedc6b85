import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync conflicts`, run as the built binary: every row a merge rule deleted (Protocol/merge.md §5),
/// with its discarded values, in text and as JSON.
@Suite struct ConflictsCommandTests {
    static let schema = "CREATE TABLE users(id TEXT PRIMARY KEY, email TEXT UNIQUE, nick TEXT);"

    /// a writes u1, then b writes u2 with the same email: the later one loses on both.
    static func clash() async throws -> (a: CLIStore, b: CLIStore) {
        let a = try await CLIStore(replica: "a", schema: schema, extra: [])
        let b = try await CLIStore(replica: "b", schema: schema, extra: [])
        try await CLIStore.trustEachOther([(a, "a"), (b, "b")])
        try await a.exec("INSERT INTO users VALUES ('u1', 'same@example.com', 'first')")
        try await Task.sleep(for: .milliseconds(5))
        try await b.exec("INSERT INTO users VALUES ('u2', 'same@example.com', 'second')")
        let exchange = try TemporaryDirectory("tidemark-cli-conflicts")
        for _ in 0..<2 {
            for store in [a, b] {
                #expect(try await store.sync("push", "--to", exchange.path).exitCode == 0)
                #expect(try await store.sync("pull", "--from", exchange.path, "--no-prune").exitCode == 0)
            }
        }
        return (a, b)
    }

    @Test func aStoreWithoutConflictsListsNone() async throws {
        let a = try await CLIStore(replica: "a")
        let text = try await a.sync("conflicts")
        #expect(text.exitCode == 0 && text.stdout.isEmpty && text.stderr.isEmpty, "\(text)")
        let json = try await a.sync("conflicts", "--json")
        #expect(json.exitCode == 0 && json.stdoutLines == ["[]"], "\(json)")
    }

    @Test func theLosingRowIsListedWithItsValuesInTextAndJSON() async throws {
        let (a, b) = try await Self.clash()
        for store in [a, b] {
            let rows = try store.tables()["users"]?.rows.map { $0[0] }
            #expect(rows == [.text("u1")], "the later write lost on every replica")

            let text = try await store.sync("conflicts")
            #expect(text.exitCode == 0 && text.stderr.isEmpty, "\(text)")
            #expect(text.stdoutLines.count == 2, "\(text)")
            let head = try #require(text.stdoutLines.first)
            #expect(head.contains("  users {\"id\":\"u2\"}  "), "\(text)")
            #expect(head.contains("  unique  ") || head.contains("  remote  "), "\(text)")
            #expect(
                text.stdoutLines.last == "  discarded {\"email\":\"same@example.com\",\"nick\":\"second\"}", "\(text)")

            let json = try await store.sync("conflicts", "--json")
            #expect(json.exitCode == 0 && json.stderr.isEmpty, "\(json)")
            let parsed = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json)")
            #expect(parsed.count == 1, "\(json)")
            let conflict = try #require(parsed.first)
            #expect(conflict["table"] as? String == "users")
            #expect((conflict["key"] as? [String: Any])?["id"] as? String == "u2")
            #expect(["unique", "remote"].contains(conflict["kind"] as? String ?? ""), "\(conflict)")
            #expect((conflict["generation"] as? Int).map { $0 % 2 == 0 } == true, "\(conflict)")
            let row = try #require(conflict["row"] as? [String: Any])
            #expect(row["email"] as? String == "same@example.com" && row["nick"] as? String == "second")
            #expect((conflict["detected"] as? String)?.hasSuffix("Z") == true, "\(conflict)")
            #expect((conflict["resolved_by"] as? String)?.count == 32, "\(conflict)")
        }
    }

    /// A repair is an ordinary write: written again with another email, the row syncs like any row.
    @Test func aRepairSyncsLikeAnyWrite() async throws {
        let (a, b) = try await Self.clash()
        try await b.exec("INSERT INTO users VALUES ('u2', 'other@example.com', 'second')")
        let exchange = try TemporaryDirectory("tidemark-cli-conflicts")
        for store in [b, a] {
            #expect(try await store.sync("push", "--to", exchange.path).exitCode == 0)
            #expect(try await store.sync("pull", "--from", exchange.path).exitCode == 0)
        }
        #expect(try a.tables()["users"]?.rows.map { $0[0] } == [.text("u1"), .text("u2")])
    }
}
