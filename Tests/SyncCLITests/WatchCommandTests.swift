import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync watch`: transactions from other processes, printed as they commit.
@Suite struct WatchCommandTests {
    /// The first `count` lines of `watch`, or fewer if none came for `timeout` (a guard against
    /// hanging, not a measurement).
    static func lines(_ count: Int, of watch: RunningCommand, timeout: Duration = .seconds(15)) async -> [String] {
        await withTaskGroup(of: [String]?.self) { group in
            group.addTask {
                var lines: [String] = []
                for await line in watch.lines {
                    lines.append(line)
                    if lines.count == count { break }
                }
                return lines
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return (await group.next() ?? nil) ?? []
        }
    }

    @Test func printsWritesFromExecAndTheSQLiteShellAsJSON() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('before')")
        let start = try await store.token()
        let watch = try SyncProcess.start(["watch", "--store", store.path, "--since", start, "--json"])
        try await store.exec("INSERT INTO items(id, qty) VALUES ('exec', 1)", author: "cli")
        try await SQLiteShell.execute(store.path, "UPDATE items SET qty = 2 WHERE id = 'exec'")

        let printed = await Self.lines(2, of: watch)
        let stopped = await watch.stop()
        #expect(stopped.stderr.isEmpty, "\(stopped)")
        try #require(printed.count == 2, "watch printed \(printed), then \(stopped)")

        let watched = try printed.map { line in
            try LogDocument.transaction(
                try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
        }
        let logged = try await store.log("--since", start)
        #expect(watched == logged)
        #expect(watched.map(\.seq) == [2, 3])
        #expect(watched.map(\.author) == ["cli", nil])
        #expect(
            watched.last?.changes == [
                LoggedChange(
                    type: "update", table: "items", key: ["id": .text("exec")], values: ["qty": .integer(2)],
                    columns: ["qty"])
            ])
    }

    @Test func printsOneSummaryLinePerTransaction() async throws {
        let store = try await CLIStore()
        let start = try await store.token()
        let watch = try SyncProcess.start(["watch", "--since", start], environment: ["SYNC_STORE": store.path])
        try await store.exec(
            "INSERT INTO items(id) VALUES ('a'); INSERT INTO tags VALUES ('a', 't', 1)", author: "me", context: "here")
        let printed = await Self.lines(1, of: watch)
        _ = await watch.stop()
        try #require(printed.count == 1)
        let words = printed[0].split(separator: " ").map(String.init)
        let id = try #require(try await store.status()["id"] as? String)
        #expect(words.first == String(id.prefix(8)))
        #expect(Array(words.dropFirst(1).prefix(1)) == ["#1"])
        #expect(Array(words.dropFirst(3)) == ["2", "change(s)", "[items,tags]", "author=me", "context=here"])
    }

    @Test func anExpiredStartingTokenIsAnError() async throws {
        let store = try await CLIStore()
        try await store.exec("INSERT INTO items(id) VALUES ('1')")
        let old = try await store.token()
        try await store.exec("INSERT INTO items(id) VALUES ('2')")
        try Store.open(store.path).deleteHistory(before: try History.Token(parsing: try await store.token()))
        let result = try await store.sync("watch", "--since", old)
        expectFailure(result, "history token expired", hint: "without --since")
    }
}
