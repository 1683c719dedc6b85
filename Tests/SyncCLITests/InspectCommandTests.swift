import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync inspect`, run as the built binary: what it shows of a valid bundle, as text and JSON, and
/// one error line for a damaged one.
@Suite struct InspectCommandTests {
    @Test func inspectShowsAValidBundle() async throws {
        let a = try await CLIStore(replica: "a")
        try await a.exec(
            "INSERT INTO items(id, name, qty) VALUES ('a-1', 'one', 1), ('a-2', 'two', 2)", author: "ann", context: "ui"
        )
        try await a.exec("UPDATE items SET qty = 5 WHERE id = 'a-1'")
        let bundle = try await a.exportAll()
        let id = try await a.id()
        let key = try await a.publicKey()
        let token = try await a.token()

        let text = try await SyncProcess.run(["inspect", bundle])
        #expect(text.exitCode == 0 && text.stderr.isEmpty, "\(text)")
        let lines = text.stdoutLines
        try #require(lines.count == 12, "\(text)")
        #expect(lines[0] == "bundle     changes, format 1, 2 transactions, 3 changes")
        #expect(lines[1] == "sender     a \(id) \(key)")
        #expect(lines[2] == "signature  valid (sender and every origin's chain)")
        #expect(lines[3].hasPrefix("created    ") && lines[3].hasSuffix("Z"))
        #expect(lines[4] == "since      \(History.Token.zero)")
        #expect(lines[5] == "through    \(token)")
        #expect(lines[6] == "origin     \(id) #1..#2")
        #expect(lines[7].hasPrefix("\(id.short) #1  ") && lines[7].hasSuffix("  author=ann  context=ui"), "\(lines[7])")
        // A bundle carries columns in canonical (name) order.
        #expect(lines[8] == "  insert items [id='a-1'] name='one' note=NULL photo=NULL price=NULL qty=1")
        #expect(lines[9] == "  insert items [id='a-2'] name='two' note=NULL photo=NULL price=NULL qty=2")
        #expect(lines[10].hasPrefix("\(id.short) #2  "))
        #expect(lines[11] == "  update items [id='a-1'] qty=5")

        let json = try await SyncProcess.run(["inspect", "--json", bundle])
        #expect(json.exitCode == 0 && json.stderr.isEmpty, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["format"] as? Int == 1)
        #expect(object["kind"] as? String == "changes")
        let sender = try #require(object["sender"] as? [String: String])
        #expect(sender == ["name": "a", "id": id.description, "public_key": key])
        #expect(object["signature"] as? String == "valid")
        #expect(object["since"] as? String == History.Token.zero.description)
        #expect(object["through"] as? String == token)
        #expect(object["transaction_count"] as? Int == 2)
        #expect(object["change_count"] as? Int == 3)
        let origins = try #require(object["origins"] as? [[String: Any]])
        #expect(
            origins.count == 1 && origins[0]["id"] as? String == id.description && origins[0]["first"] as? Int == 1
                && origins[0]["last"] as? Int == 2)
        let transactions = try #require(object["transactions"] as? [[String: Any]])
        #expect(transactions.map { $0["seq"] as? Int } == [1, 2])
        #expect(transactions.map { $0["author"] as? String } == ["ann", nil])
        #expect(transactions.map { ($0["changes"] as? [Any])?.count } == [2, 1])
        #expect(transactions.last?["token"] as? String == token)
    }

    @Test func inspectRefusesADamagedBundleWithOneErrorLine() async throws {
        let a = try await CLIStore(replica: "a")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let bytes = try BundleBytes(contentsOf: try await a.exportAll())
        let damagedHint = "the file is damaged, incomplete or not from Tidemark; ask its sender to export it again"
        let flipped = a.directory.file("flipped.tmb")
        try Data(bytes.flippingBit(0, at: bytes.frames.last!.payload.lowerBound + 3)).write(
            to: URL(fileURLWithPath: flipped))
        let cut = a.directory.file("cut.tmb")
        try Data(bytes.bytes.prefix(bytes.bytes.count / 2)).write(to: URL(fileURLWithPath: cut))
        for json in [[], ["--json"]] {
            expectFailure(
                try await SyncProcess.run(["inspect"] + json + [flipped]),
                "\(flipped): the bundle's signature does not verify (the file was altered or not signed by its sender)",
                hint: damagedHint)
            expectFailure(try await SyncProcess.run(["inspect"] + json + [cut]), "\(cut): ", hint: damagedHint)
            expectFailure(
                try await SyncProcess.run(["inspect"] + json + [a.path]),
                "\(a.path): not a Tidemark bundle (bad magic) at byte 0")
            expectFailure(
                try await SyncProcess.run(["inspect"] + json + [a.directory.file("none.tmb")]),
                "cannot read \(a.directory.file("none.tmb")): no such file")
        }
    }
}
