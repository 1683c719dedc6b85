import Crypto
import Foundation
import Testing
import Tidemark
import TidemarkCore
import TidemarkTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Private key files: refused when other users may read or change them, and, when damaged or of
/// another kind, never the source of a signature a peer accepts as the original key's.
@Suite struct KeyFileTests {
    /// `a` and `b`, `b` trusting `a`, `a` holding rows to export.
    struct Pair {
        let directory: TemporaryDirectory
        let a: TestReplica
        let b: TestReplica

        init() throws {
            directory = try TemporaryDirectory("tidemark-keys")
            a = try TestReplica("a", in: directory)
            b = try TestReplica("b", in: directory)
            try b.trust(a)
            _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        }

        /// The text of `a`'s key file.
        func keyText() throws -> String { try String(contentsOfFile: a.key.path, encoding: .utf8) }

        /// Writes `text` to `DIRECTORY/NAME` with mode 0600 and returns the path.
        func write(_ text: String, as name: String) throws -> String {
            let path = directory.file(name)
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            chmod(path, 0o600)
            return path
        }
    }

    // MARK: - Permissions

    @Test func aKeyOthersCanReadOrWriteIsRefusedWithTheFix() throws {
        let pair = try Pair()
        let path = pair.a.key.path
        for mode: mode_t in [0o640, 0o604, 0o620, 0o602, 0o610, 0o601, 0o644, 0o660, 0o666, 0o777] {
            chmod(path, mode)
            do {
                _ = try KeyFile.load(path)
                Issue.record("mode \(String(mode, radix: 8)) was accepted")
            } catch let error as StoreError {
                #expect(error == .keyFileExposed(path: path, mode: UInt16(mode)))
                #expect(
                    error.description
                        == "key file \(path) is readable or writable by other users (mode \(String(format: "%04o", mode))): refusing to use it"
                )
                #expect(error.hint == "restrict it to its owner: chmod 600 \(path)")
            }
            // Nothing that needs the key works with it either.
            #expect(throws: StoreError.keyFileExposed(path: path, mode: UInt16(mode))) {
                _ = try pair.a.store.push(to: pair.directory.path, key: try KeyFile.load(path))
            }
        }
        #expect(!FileManager.default.fileExists(atPath: pair.directory.file(pair.a.id.description)))
        for mode: mode_t in [0o600, 0o400, 0o700] {
            chmod(path, mode)
            #expect(try KeyFile.load(path).publicKey == pair.a.store.publicKey, "mode \(String(mode, radix: 8))")
        }
    }

    @Test func initializingWithAnExposedExistingKeyIsRefused() throws {
        let pair = try Pair()
        let key = try pair.write(try pair.keyText(), as: "shared.key")
        chmod(key, 0o644)
        let store = pair.directory.file("c.db")
        #expect(throws: StoreError.keyFileExposed(path: key, mode: 0o644)) {
            _ = try Store.initialize(
                store, setup: Store.Setup(replicaName: "c", schema: ("c.sql", TestReplica.schema), keyPath: key))
        }
    }

    // MARK: - Damaged keys and keys of other kinds

    /// Each damaged or foreign key file, and the problem `load` must report.
    static func refusedVariants(of pem: String) -> [(name: String, text: String, problem: String)] {
        let lines = pem.split(separator: "\n").map(String.init)
        let body = lines[1]
        let der = [UInt8](Data(base64Encoded: body)!)
        func pemOf(_ bytes: [UInt8]) -> String {
            "-----BEGIN PRIVATE KEY-----\n\(Data(bytes).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        }
        let stem = "is not an Ed25519 private key in PEM (PKCS#8): "
        var wrongPrefix = der
        wrongPrefix[1] ^= 0x01
        return [
            ("empty", "", stem + "the file is empty"),
            ("blank", "\n\n", stem + "the file is empty"),
            ("no header", body + "\n", stem + "no -----BEGIN PRIVATE KEY----- line"),
            (
                "public key", "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n",
                stem + "no -----BEGIN PRIVATE KEY----- line"
            ),
            ("cut in half", String(pem.prefix(pem.count / 2)), stem + "its base64 text is damaged"),
            (
                "body cut by 4", lines[0] + "\n" + body.dropLast(4) + "\n" + lines[2] + "\n",
                stem + "it holds 45 bytes of DER where an Ed25519 key has 48, with a different structure"
            ),
            (
                "body cut by 1", lines[0] + "\n" + body.dropLast(1) + "\n" + lines[2] + "\n",
                stem + "its base64 text is damaged"
            ),
            (
                "not base64", lines[0] + "\n" + body.dropLast(30) + "!" + body.suffix(29) + "\n" + lines[2] + "\n",
                stem + "its base64 text is damaged"
            ),
            (
                "wrong DER prefix", pemOf(wrongPrefix),
                stem + "it holds 48 bytes of DER where an Ed25519 key has 48, with a different structure"
            ),
            (
                "one byte short", pemOf(Array(der.dropLast())),
                stem + "it holds 47 bytes of DER where an Ed25519 key has 48, with a different structure"
            ),
            (
                "one byte long", pemOf(der + [0]),
                stem + "it holds 49 bytes of DER where an Ed25519 key has 48, with a different structure"
            ),
            ("X25519 OID", pemOf(Array(der[0..<11]) + [0x6e] + Array(der[12...])), stem + "it holds an X25519 key"),
            (
                "EC", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n",
                stem + "it holds an EC key"
            ),
            (
                "encrypted", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIGb\n-----END ENCRYPTED PRIVATE KEY-----\n",
                stem + "it is encrypted; Tidemark needs an unencrypted key"
            ),
        ]
    }

    @Test func damagedKeyFilesAreRefusedSayingWhatIsWrongWithoutQuotingThem() throws {
        let pair = try Pair()
        let pem = try pair.keyText()
        let secret = pem.split(separator: "\n")[1].dropFirst(22)
        for (name, text, problem) in Self.refusedVariants(of: pem) {
            let path = try pair.write(text, as: name.replacingOccurrences(of: " ", with: "-") + ".key")
            #expect(throws: StoreError.keyFile(path: path, problem: problem), "\(name)") { _ = try KeyFile.load(path) }
            do { _ = try KeyFile.load(path) } catch let error as StoreError {
                #expect(
                    !error.description.contains(secret.prefix(12)) && !error.description.contains(secret.suffix(12)),
                    "\(name): \(error)")
                #expect(error.hint == "check \(path), or use the right key file")
            }
        }
        let folder = pair.directory.file("a-folder.key")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(throws: StoreError.keyFile(path: folder, problem: "is not a regular file")) {
            _ = try KeyFile.load(folder)
        }
        let missing = pair.directory.file("missing.key")
        #expect(throws: StoreError.keyFile(path: missing, problem: "does not exist")) { _ = try KeyFile.load(missing) }
    }

    /// Keys `openssl genpkey` makes: Ed25519 loads (PEM PKCS#8 as Tidemark writes it), the others are
    /// refused by name.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs /usr/bin/openssl"))
    func opensslKeysOfOtherKindsAreRefusedAndItsEd25519KeyLoads() async throws {
        let pair = try Pair()
        let stem = "is not an Ed25519 private key in PEM (PKCS#8): "
        let cases: [([String], String?)] = [
            (["-algorithm", "ED25519"], nil),
            (["-algorithm", "X25519"], stem + "it holds an X25519 key"),
            (["-algorithm", "X448"], stem + "it holds an X448 key"),
            (["-algorithm", "ED448"], stem + "it holds an Ed448 key"),
            (
                ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
                stem + "it holds 138 bytes of DER where an Ed25519 key has 48, with a different structure"
            ),
        ]
        for (arguments, problem) in cases {
            let path = pair.directory.file("openssl-\(arguments[1]).key")
            let made = try await CommandRunner.run("/usr/bin/openssl", ["genpkey"] + arguments + ["-out", path])
            try #require(made.exitCode == 0, "\(made)")
            chmod(path, 0o600)
            if let problem {
                #expect(throws: StoreError.keyFile(path: path, problem: problem), "\(arguments)") {
                    _ = try KeyFile.load(path)
                }
            } else {
                let key = try KeyFile.load(path)
                #expect(key.publicKey.count == 32 && key.publicKey != pair.a.store.publicKey)
            }
        }
    }

    /// Changing any one base64 character of the key either makes the file unloadable or gives a
    /// different valid key (any 32 bytes are an Ed25519 seed). Such a key's signatures never pass
    /// for the original key's: not on a message, not on a bundle that names the original key, and
    /// a store that adopts it is a stranger to peers that trust the original.
    @Test func aKeyWithAChangedCharacterNeverSignsForTheOriginalKey() throws {
        let pair = try Pair()
        let pem = try pair.keyText()
        let lines = pem.split(separator: "\n").map(String.init)
        let body = Array(lines[1])
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        let original = pair.a.store.publicKey
        let message = Array("a message".utf8)
        let bundle = try pair.a.export(to: pair.directory.file("a.tmb")).path
        let pristine = try BundleBytes(contentsOf: bundle)
        var loaded: [(index: Int, key: KeyFile)] = []
        var refused = 0

        for index in body.indices where body[index] != "=" {
            var changed = body
            changed[index] = alphabet[(alphabet.firstIndex(of: body[index])! + 1) % alphabet.count]
            let path = try pair.write(
                lines[0] + "\n" + String(changed) + "\n" + lines[2] + "\n", as: "changed-\(index).key")
            guard let key = try? KeyFile.load(path) else {
                #expect(throws: StoreError.self) { _ = try KeyFile.load(path) }
                refused += 1
                continue
            }
            loaded.append((index, key))
            #expect(key.publicKey != original, "character \(index)")
            let signature = try key.privateKey.signature(for: message)
            let originalKey = try Curve25519.Signing.PublicKey(rawRepresentation: original)
            #expect(!originalKey.isValidSignature(signature, for: message), "character \(index)")
            // The store refuses to sign with it.
            #expect(throws: ExchangeError.wrongKey(path: path)) {
                _ = try pair.a.store.exportBundle(since: .zero, to: pair.directory.file("x.tmb"), key: key)
            }
            // Nor pushes with it, and makes nothing in the folder first.
            let folder = pair.directory.file("exchange-\(index)")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
            #expect(throws: ExchangeError.wrongKey(path: path)) {
                _ = try pair.a.store.push(to: folder, key: key)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
            // A's bundle signed with it instead of a's key: refused, the store unchanged.
            var forged = pristine
            try forged.resign(with: key)
            let forgedPath = pair.directory.file("forged-\(index).tmb")
            try forged.write(to: forgedPath)
            try ExchangeExpect.rejected(pair.b, "character \(index)") {
                try pair.b.store.importBundle(at: forgedPath)
            } matches: {
                $0 == .badBundle(path: forgedPath, .verification(.badSignature))
            }
        }
        // The 22 characters of the DER prefix cannot change without the file being refused.
        #expect(refused >= 21, "refused \(refused)")
        #expect(loaded.allSatisfy { $0.index >= 21 }, "\(loaded.map(\.index))")
        #expect(!loaded.isEmpty, "no variant loaded: the test would prove nothing about signatures")

        // A store that adopts one of those keys gets a new identity, and b refuses its bundles.
        let stranger = try #require(loaded.first)
        let store = try Store.initialize(
            pair.directory.file("stranger.db"),
            setup: Store.Setup(
                replicaName: "a", schema: ("a.sql", TestReplica.schema), preserve: ["items.name"],
                keyPath: stranger.key.path)
        ).store
        #expect(store.replica.id != pair.a.id)
        _ = try store.execute(sql: "INSERT INTO items(id) VALUES ('x-1')")
        let foreign = try store.exportBundle(since: .zero, to: pair.directory.file("stranger.tmb"), key: stranger.key)
            .path
        try ExchangeExpect.rejected(pair.b, "stranger") {
            try pair.b.store.importBundle(at: foreign)
        } matches: {
            $0
                == .unknownSigner(
                    path: foreign, name: "a", publicKey: Data(stranger.key.publicKey).base64EncodedString())
        }
    }
}
