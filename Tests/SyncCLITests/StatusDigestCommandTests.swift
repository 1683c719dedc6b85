import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync status` compares each member's rows with this replica's by the row digest of its latest
/// watermark (Protocol/exchange.md §8), and `inspect` shows a watermark's digest.
@Suite struct StatusDigestCommandTests {
    @Test func statusSaysWhetherEachMemberHoldsTheSameRowsAndWhichTableDiffers() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.trust(b, as: "b")
        try await b.trust(a, as: "a")
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await a.exec("INSERT INTO items(id, name, qty) VALUES ('a-1', 'one', 1), ('a-2', 'two', 2)")
        try await SQLiteShell.execute(b.path, "INSERT INTO tags(item, tag) VALUES ('a-1', 'red')")
        func round() async throws {
            for store in [a, b] {
                let pushed = try await store.sync("push", "--to", exchange.path)
                try #require(pushed.exitCode == 0, "\(pushed)")
            }
            for store in [a, b] {
                let pulled = try await store.sync("pull", "--from", exchange.path)
                try #require(pulled.exitCode == 0 && pulled.stderr.isEmpty, "\(pulled)")
            }
        }
        try await round()
        try await round()
        try a.expectSameTables(as: b)

        let same = try await a.sync("status")
        #expect(same.exitCode == 0, "\(same)")
        let member = try #require(same.stdoutLines.first { $0.hasPrefix("member   b") }, "\(same)")
        #expect(member.hasSuffix("; same rows as here"), "\(member)")
        let rowsLine = try #require(same.stdoutLines.first { $0.hasPrefix("rows     ") }, "\(same)")
        #expect(rowsLine.hasPrefix("rows     3 rows in 2 tables, digest "), "\(rowsLine)")
        let bRows = try #require((try await b.sync("status")).stdoutLines.first { $0.hasPrefix("rows     ") })
        #expect(bRows == rowsLine, "equal digests print equal lines")

        // The sqlite3 shell removes b's capture triggers on items, writes, and puts them back.
        let triggers = try await SQLiteShell.execute(
            b.path, "SELECT sql || ';' FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'items'")
        let names = try await SQLiteShell.execute(
            b.path,
            "SELECT 'DROP TRIGGER \"' || name || '\";' FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'items'"
        )
        try await SQLiteShell.execute(b.path, names + "UPDATE items SET name = 'astray' WHERE id = 'a-2';" + triggers)
        try await round()
        try await round()

        let differs = try await a.sync("status")
        let line = try #require(differs.stdoutLines.first { $0.hasPrefix("member   b") }, "\(differs)")
        #expect(line.hasSuffix("; rows differ in 'items'"), "\(line)")
        let json = try await a.sync("status", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let members = try #require(object["members"] as? [[String: Any]])
        let rows = try #require(members.first { $0["name"] as? String == "b" }?["rows"] as? [String: Any])
        #expect(rows["state"] as? String == "differ")
        #expect(rows["tables"] as? [String] == ["items"])
        let digest = try #require(object["digest"] as? [String: Any])
        let tables = try #require(digest["tables"] as? [[String: Any]])
        #expect(tables.first { $0["name"] as? String == "items" }?["rows"] as? Int == 2)

        // b's watermark carries its digest; inspect shows it.
        let watermark = exchange.path + "/" + (try await b.id()).description + "/watermark.tmw"
        let inspected = try await SyncProcess.run(["inspect", watermark])
        #expect(
            inspected.stdoutLines.contains { $0.hasPrefix("rows       3 rows in 2 tables, digest ") }, "\(inspected)")
    }
}
