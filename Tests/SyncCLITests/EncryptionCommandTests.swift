import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync encryption`, `sync identity --age-identity` and encrypted files through the CLI, checked
/// with the real `age` tool: it decrypts a bundle, a snapshot and a watermark with a member's
/// identity, `sync inspect` verifies what it decrypted, and a removed member's identity fails.
@Suite(
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/age"), "needs /usr/bin/age (Debian package age)"))
struct EncryptionCommandTests {
    static let age = "/usr/bin/age"

    @Test func theAgeToolDecryptsABundleASnapshotAndAWatermarkWithAMembersIdentity() async throws {
        let (a, b, c) = (
            try await CLIStore(replica: "a"), try await CLIStore(replica: "b"), try await CLIStore(replica: "c")
        )
        for (store, others) in [(a, [(b, "b"), (c, "c")]), (b, [(a, "a"), (c, "c")]), (c, [(a, "a"), (b, "b")])] {
            for (other, name) in others { try await store.trust(other, as: name) }
        }
        let folder = a.directory.file("shared")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

        #expect(try await a.sync("encryption").stdoutLines == ["encryption off"])
        let on = try await a.sync("encryption", "on")
        #expect(on.exitCode == 0 && on.stderr.isEmpty, "\(on)")
        #expect(on.stdoutLines.first?.hasPrefix("encryption on: ") == true)
        #expect(try await a.sync("encryption", "on").stdoutLines == ["encryption is already on; nothing changed"])
        expectFailure(try await a.sync("encryption", "maybe"), "maybe")
        #expect(try await a.status()["encryption"] as? Bool == true)

        try await a.exec("INSERT INTO items(id, name, note) VALUES ('a-1', 'SECRET-apple', 'SECRET-note')")
        let pushed = try await a.sync("push", "--to", folder)
        #expect(pushed.exitCode == 0, "\(pushed)")
        for store in [b, c] { #expect(try await store.sync("pull", "--from", folder).exitCode == 0) }
        #expect(try await c.sync("encryption").stdoutLines == ["encryption on"])
        let pruned = try await a.sync("pull", "--from", folder)
        #expect(pruned.exitCode == 0 && pruned.stdout.contains("1 exchange files"), "\(pruned)")

        let aFolder = folder + "/" + (try await a.replicaID())
        let files = try FileManager.default.contentsOfDirectory(atPath: aFolder).sorted()
        #expect(files.contains("snapshot.tms") && files.contains("watermark.tmw"), "\(files)")
        try await c.exec("INSERT INTO items(id, name) VALUES ('c-1', 'SECRET-cherry')")
        #expect(try await c.sync("push", "--to", folder).exitCode == 0)
        let cFolder = folder + "/" + (try await c.replicaID())
        let bundle = cFolder + "/0000000001.tmb"

        let identity = b.directory.file("b.age")
        let printed = try await b.sync("identity", "--age-identity")
        #expect(printed.exitCode == 0 && printed.stdoutLines.count == 1, "\(printed)")
        #expect(printed.stdoutLines.first?.hasPrefix("AGE-SECRET-KEY-1") == true)
        try printed.stdout.write(toFile: identity, atomically: false, encoding: .utf8)
        let recipient = try await b.sync("identity", "--age-recipient")
        #expect(recipient.stdoutLines.first?.hasPrefix("age1") == true)

        for (path, kind) in [
            (bundle, "changes"), (aFolder + "/snapshot.tms", "snapshot"), (aFolder + "/watermark.tmw", "watermark"),
        ] {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(bytes.starts(with: Data("age-encryption.org/v1\n".utf8)), "\(path)")
            for secret in ["SECRET-", "items", "photo"] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(path): \(secret)")
            }
            let clear = b.directory.file("clear-\(kind)")
            let decrypted = try await CommandRunner.run(Self.age, ["-d", "-i", identity, "-o", clear, path])
            #expect(decrypted.exitCode == 0, "\(decrypted)")
            let inspected = try await SyncProcess.run(["inspect", clear])
            #expect(inspected.exitCode == 0, "\(inspected)")
            #expect(inspected.stdoutLines.first?.hasPrefix("bundle     \(kind), format 1") == true, "\(inspected)")
            #expect(inspected.stdoutLines.contains("signature  valid (sender and every origin's chain)"))
        }

        // `sync inspect` on the encrypted file: it needs a key, and says how to get one.
        expectFailure(try await SyncProcess.run(["inspect", bundle]), "is encrypted, and no key was given to open it")
        let withKey = try await SyncProcess.run(["inspect", "--key", b.path + ".key", bundle])
        #expect(withKey.exitCode == 0 && withKey.stdout.contains("SECRET-cherry"), "\(withKey)")

        // c removes b: what c writes afterwards is not for b, and age says so.
        #expect(try await c.peers("remove", "b").exitCode == 0)
        try await c.exec("INSERT INTO items(id, name) VALUES ('c-2', 'SECRET-after')")
        #expect(try await c.sync("push", "--to", folder).exitCode == 0)
        let after = cFolder + "/0000000002.tmb"
        let refused = try await CommandRunner.run(Self.age, ["-d", "-i", identity, after])
        #expect(refused.exitCode != 0)
        #expect(refused.stdout.isEmpty)
        let aIdentity = a.directory.file("a.age")
        try (try await a.sync("identity", "--age-identity")).stdout.write(
            toFile: aIdentity, atomically: false, encoding: .utf8)
        #expect(
            try await CommandRunner.run(Self.age, ["-d", "-i", aIdentity, "-o", a.directory.file("after"), after])
                .exitCode == 0)

        // The clear copy b decrypted from c's first bundle is a downgrade: c had seen the setting.
        let before = try await b.dump()
        expectFailure(try await b.sync("import", b.directory.file("clear-changes")), "refused as a downgrade")
        #expect(try await b.dump() == before)
        // The encrypted original imports with b's key (found beside the store).
        let imported = try await b.sync("import", bundle)
        #expect(imported.exitCode == 0, "\(imported)")
        #expect(try await b.exec("SELECT name FROM items WHERE id = 'c-1'").stdout.contains("SECRET-cherry"))
    }

    @Test func anExportForAPeerIsEncryptedForThatPeerAndTheWriterOnly() async throws {
        let (a, b, c) = (
            try await CLIStore(replica: "a"), try await CLIStore(replica: "b"), try await CLIStore(replica: "c")
        )
        try await a.trust(b, as: "b")
        try await a.trust(c, as: "c")
        try await b.trust(a, as: "a")
        #expect(try await a.sync("encryption", "on").exitCode == 0)
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'SECRET-x')")
        let out = a.directory.file("for-b.tmb")
        #expect(try await a.sync("export", "--peer", "b", "--out", out).exitCode == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: out))
        #expect(String(decoding: bytes.prefix(400), as: UTF8.self).components(separatedBy: "-> X25519 ").count - 1 == 2)
        let imported = try await b.sync("import", out)
        #expect(imported.exitCode == 0, "\(imported)")
        let cIdentity = c.directory.file("c.age")
        try (try await c.sync("identity", "--age-identity")).stdout.write(
            toFile: cIdentity, atomically: false, encoding: .utf8)
        #expect(try await CommandRunner.run(Self.age, ["-d", "-i", cIdentity, out]).exitCode != 0)
        let cBefore = try await c.dump()
        try await c.trust(a, as: "a")
        let trusted = try await c.dump()
        expectFailure(
            try await c.sync("import", out), "encrypted for someone else",
            hint: "(exported for another peer, written before its sender trusted this replica")
        #expect(try await c.dump() == trusted)
        #expect(cBefore != trusted)
    }
}

extension CLIStore {
    /// The replica id, as `sync status --json` prints it.
    func replicaID() async throws -> String { try #require(try await status()["id"] as? String) }
}
