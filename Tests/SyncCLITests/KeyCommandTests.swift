import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Key files and trust, run as the built binary: an exposed key is refused with the fix, a damaged
/// one with what is wrong, and removing a peer takes effect on the next pull.
@Suite struct KeyCommandTests {
    @Test func aKeyOthersCanReadIsRefusedUntilItIsChmodded600() async throws {
        let a = try await CLIStore(replica: "a")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        let key = a.path + ".key"
        chmod(key, 0o640)

        for arguments in [
            ["push", "--to", exchange.path],
            ["export", "--since", History.Token.zero.description, "--out", a.directory.file("x.tmb")],
        ] {
            let result = try await SyncProcess.run([arguments[0], "--store", a.path] + arguments.dropFirst())
            expectFailure(
                result, "key file \(key) is readable or writable by other users (mode 0640): refusing to use it",
                hint: "restrict it to its owner: chmod 600 \(key)")
        }
        #expect((FileManager.default.subpaths(atPath: exchange.path) ?? []).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: a.directory.file("x.tmb")))

        chmod(key, 0o600)
        let retry = try await a.sync("push", "--to", exchange.path)
        #expect(retry.exitCode == 0 && retry.stderr.isEmpty, "\(retry)")
    }

    @Test func aDamagedKeyIsRefusedSayingWhatIsWrong() async throws {
        let a = try await CLIStore(replica: "a")
        let pem = try String(contentsOfFile: a.path + ".key", encoding: .utf8)
        let damaged = a.directory.file("damaged.key")
        try String(pem.prefix(41)).write(toFile: damaged, atomically: false, encoding: .utf8)
        chmod(damaged, 0o600)
        let result = try await a.sync("push", "--key", damaged, "--to", a.directory.path)
        expectFailure(
            result, "key file \(damaged): is not an Ed25519 private key in PEM (PKCS#8): its base64 text is damaged",
            hint: "check \(damaged), or pass the right one with --key FILE")
    }

    /// `peers remove` applies to the very next pull: the removed peer's new bundle is skipped with
    /// a warning and not applied; trusting it again lets the next pull apply it.
    @Test func aRemovedPeerIsRefusedFromTheNextPullOn() async throws {
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        let exchange = try TemporaryDirectory("tidemark-cli-exchange")
        try await b.trust(a, as: "a")
        try await a.trust(b, as: "b")
        try await a.exec("INSERT INTO items(id) VALUES ('a-1')")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        let first = try await b.sync("pull", "--from", exchange.path, "--no-prune")
        #expect(first.exitCode == 0 && first.stderr.isEmpty, "\(first)")

        try await a.exec("INSERT INTO items(id) VALUES ('a-2')")
        #expect(try await a.sync("push", "--to", exchange.path).exitCode == 0)
        #expect(try await b.peers("remove", "a").exitCode == 0)
        let before = try b.tables()
        let refused = try await b.sync("pull", "--from", exchange.path, "--no-prune")
        #expect(refused.exitCode == 0, "\(refused)")
        let second = exchange.path + "/" + (try await a.id()).description + "/0000000002.tmb"
        #expect(
            refused.stderrLines.contains { $0.hasPrefix("warning: skipped \(second): signed by unknown replica 'a'") },
            "\(refused)")
        #expect(try b.tables().differences(from: before, mine: "after", theirs: "before").isEmpty)
        #expect(try await SQLiteShell.execute(b.path, "SELECT id FROM items ORDER BY id") == "a-1\n")

        try await b.trust(a, as: "a")
        let again = try await b.sync("pull", "--from", exchange.path, "--no-prune")
        #expect(again.exitCode == 0 && again.stderr.isEmpty, "\(again)")
        #expect(try await SQLiteShell.execute(b.path, "SELECT id FROM items ORDER BY id") == "a-1\na-2\n")
    }
}
