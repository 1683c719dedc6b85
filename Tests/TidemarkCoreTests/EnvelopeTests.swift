import Crypto
import Foundation
import Testing
import TidemarkCore
import TidemarkTestSupport

/// The age envelope of Protocol/encryption.md, checked against the real `age` tool in both
/// directions, and its rejections.
struct EnvelopeTests {
    @Test func theX25519KeyDerivedFromTheSeedMatchesTheOneMappedFromTheEd25519PublicKey() {
        for _ in 0..<64 {
            let signing = Curve25519.Signing.PrivateKey()
            let identity = EnvelopeKeys.identity(of: signing)
            let mapped = EnvelopeKeys.recipient(ofSigningKey: Array(signing.publicKey.rawRepresentation))
            #expect(mapped?.rawRepresentation == identity.publicKey.rawRepresentation)
        }
    }

    @Test func theIdentityOfAPointThatIsNotOnAnX25519KeyIsRefused() {
        // y = 1 is the Edwards identity point: (1 + y) / (1 − y) has no value.
        #expect(EnvelopeKeys.recipient(ofSigningKey: [1] + [UInt8](repeating: 0, count: 31)) == nil)
        #expect(EnvelopeKeys.recipient(ofSigningKey: [1, 2, 3]) == nil)
    }

    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 3 * 65_536, 200_001])
    func whatIsWrittenReadsBackForEveryRecipient(_ size: Int) throws {
        let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let keys = (0..<3).map { _ in Curve25519.Signing.PrivateKey() }
        let sealed = try seal(plaintext, for: keys.map { EnvelopeKeys.identity(of: $0).publicKey })
        for key in keys { #expect(try open(sealed, as: key) == plaintext) }
        #expect(throws: EnvelopeError.notARecipient(stanzas: 3)) {
            try open(sealed, as: Curve25519.Signing.PrivateKey())
        }
    }

    @Test func alteredTruncatedAndReorderedFilesAreRefused() throws {
        let key = Curve25519.Signing.PrivateKey()
        let plaintext = [UInt8](repeating: 7, count: 3 * 65_536 + 10)
        let sealed = try seal(plaintext, for: [EnvelopeKeys.identity(of: key).publicKey])
        let headerEnd = sealed.firstRange(of: Array("\n".utf8), after: "---")! + 1 + 16
        let chunk = 65_536 + 16

        var flipped = sealed
        flipped[headerEnd + 100] ^= 1
        #expect(throws: EnvelopeError.damaged(chunk: 0)) { try open(flipped, as: key) }

        #expect(throws: EnvelopeError.truncated(chunk: 2)) {
            try open(Array(sealed[..<(headerEnd + 2 * chunk)]), as: key)
        }
        #expect(throws: EnvelopeError.damaged(chunk: 3)) { try open(Array(sealed.dropLast(3)), as: key) }

        var reordered = Array(sealed[..<headerEnd])
        reordered += sealed[(headerEnd + chunk)..<(headerEnd + 2 * chunk)]
        reordered += sealed[headerEnd..<(headerEnd + chunk)]
        reordered += sealed[(headerEnd + 2 * chunk)...]
        #expect(throws: EnvelopeError.damaged(chunk: 0)) { try open(reordered, as: key) }

        var header = sealed
        let share = sealed.firstRange(of: Array("X25519 ".utf8), after: "")! + 7
        header[share] = header[share] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: EnvelopeError.notARecipient(stanzas: 1)) { try open(header, as: key) }

        var mac = sealed
        let macAt = sealed.firstRange(of: Array("--- ".utf8), after: "")! + 4
        mac[macAt] = mac[macAt] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: EnvelopeError.headerAltered) { try open(mac, as: key) }

        #expect(throws: EnvelopeError.self) { try open(Array(sealed[..<30]), as: key) }
        #expect(throws: EnvelopeError.damaged(chunk: 3)) { try open(sealed + [0], as: key) }
    }

    /// y = −1 (x = 0), the Ed25519 point of order 2, little-endian: it maps to u = 0.
    static let orderTwoPoint: [UInt8] = [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f]

    @Test func lowOrderKeysAreNeitherEncryptedToNorAcceptedInAStanza() throws {
        #expect(EnvelopeKeys.recipient(ofSigningKey: Self.orderTwoPoint) == nil)
        let zero = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        #expect(throws: EnvelopeError.lowOrderKey) { try EnvelopeWriter(recipients: [zero]) }

        // A stanza whose share is u = 0: every reader's shared secret is zero (age's `x25519_low_order`).
        let key = Curve25519.Signing.PrivateKey()
        let sealed = try seal([1, 2, 3], for: [EnvelopeKeys.identity(of: key).publicKey])
        var text = String(decoding: sealed.prefix { $0 != 0x0A } + [0x0A], as: UTF8.self)
        let rest = Array(sealed[text.utf8.count...])
        let stanza = String(decoding: rest.prefix { $0 != 0x0A }, as: UTF8.self)
        let share = String(stanza.split(separator: " ")[2])
        text += stanza.replacingOccurrences(of: share, with: String(repeating: "A", count: 43))
        let forged = Array(text.utf8) + rest[stanza.utf8.count...]
        #expect(throws: EnvelopeError.lowOrderKey) { try open(Array(forged), as: key) }
    }

    @Test func everyAlteredByteAndEveryCutIsRefusedByTheEnvelopeBeforeTheBundleIsRead() throws {
        let seed = SeededGenerator.seed()
        print("seed=\(seed) (replay: TIDEMARK_SEED=\(seed) swift test --filter EnvelopeTests)")
        var rng = SeededGenerator(seed: seed)
        let key = Curve25519.Signing.PrivateKey()
        let plaintext = (0..<140_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let sealed = try seal(plaintext, for: [EnvelopeKeys.identity(of: key).publicKey])
        for _ in 0..<400 {
            var altered = sealed
            let at = Int.random(in: 0..<sealed.count, using: &rng)
            altered[at] ^= UInt8.random(in: 1...255, using: &rng)
            #expect(throws: EnvelopeError.self, "seed \(seed): byte \(at)") { try open(altered, as: key) }
        }
        for _ in 0..<100 {
            let length = Int.random(in: 0..<sealed.count, using: &rng)
            #expect(throws: EnvelopeError.self, "seed \(seed): cut at \(length)") {
                try open(Array(sealed[..<length]), as: key)
            }
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/age"), "needs /usr/bin/age"))
    func theAgeToolDecryptsWhatTidemarkEncryptsAndTheOtherWayRound() async throws {
        let directory = try TemporaryDirectory()
        let key = Curve25519.Signing.PrivateKey()
        let identity = EnvelopeKeys.identity(of: key)
        let identityFile = directory.path + "/identity.txt"
        _ = FileManager.default.createFile(
            atPath: identityFile, contents: Data((EnvelopeKeys.ageIdentity(identity) + "\n").utf8),
            attributes: [.posixPermissions: 0o600])
        let plaintext = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 * 7) }

        let ours = directory.path + "/ours.age"
        _ = FileManager.default.createFile(atPath: ours, contents: Data(try seal(plaintext, for: [identity.publicKey])))
        let decrypted = try await CommandRunner.run(
            "/usr/bin/age", ["-d", "-i", identityFile, "-o", ours + ".out", ours])
        #expect(decrypted.exitCode == 0, "\(decrypted)")
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: ours + ".out"))) == plaintext)

        let clear = directory.path + "/clear"
        _ = FileManager.default.createFile(atPath: clear, contents: Data(plaintext))
        let recipient = EnvelopeKeys.ageRecipient(
            EnvelopeKeys.recipient(ofSigningKey: Array(key.publicKey.rawRepresentation))!)
        let theirs = directory.path + "/theirs.age"
        let encrypted = try await CommandRunner.run("/usr/bin/age", ["-r", recipient, "-o", theirs, clear])
        #expect(encrypted.exitCode == 0, "\(encrypted)")
        #expect(try open(Array(Data(contentsOf: URL(fileURLWithPath: theirs))), as: key) == plaintext)

        let stranger = directory.path + "/stranger.txt"
        _ = FileManager.default.createFile(
            atPath: stranger,
            contents: Data(EnvelopeKeys.ageIdentity(EnvelopeKeys.identity(of: Curve25519.Signing.PrivateKey())).utf8))
        let refused = try await CommandRunner.run("/usr/bin/age", ["-d", "-i", stranger, ours])
        #expect(refused.exitCode != 0)
    }

    private func seal(_ plaintext: [UInt8], for recipients: [Curve25519.KeyAgreement.PublicKey]) throws -> [UInt8] {
        var writer = try EnvelopeWriter(recipients: recipients)
        var out = writer.header
        // Uneven writes, as an encoder makes them.
        var start = 0
        var step = 1
        while start < plaintext.count {
            let end = min(plaintext.count, start + step)
            out += try writer.encrypt(Array(plaintext[start..<end]))
            start = end
            step = step * 3 + 1
        }
        return out + (try writer.finish())
    }

    private func open(_ sealed: [UInt8], as key: Curve25519.Signing.PrivateKey) throws -> [UInt8] {
        var reader = try EnvelopeReader(BufferSource(sealed), identity: EnvelopeKeys.identity(of: key))
        var out: [UInt8] = []
        while true {
            let bytes = try reader.read(10_000)
            if bytes.isEmpty { break }
            out += bytes
        }
        return out
    }
}

extension Array where Element == UInt8 {
    /// The index of `needle`'s first occurrence after the first occurrence of `marker` (or from the start).
    fileprivate func firstRange(of needle: [UInt8], after marker: String) -> Int? {
        var from = 0
        if !marker.isEmpty {
            let m = Array(marker.utf8)
            guard let at = (0...(count - m.count)).first(where: { Array(self[$0..<$0 + m.count]) == m }) else {
                return nil
            }
            from = at
        }
        return (from...(count - needle.count)).first { Array(self[$0..<$0 + needle.count]) == needle }
    }
}
