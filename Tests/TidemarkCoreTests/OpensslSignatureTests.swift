import Crypto
import Foundation
import Testing
import TidemarkTestSupport

/// Checks the signature constructions of Protocol/bundle.md §5 with OpenSSL, following only the
/// specification: these tests walk the frames and build the signed messages themselves, never
/// calling TidemarkCore, so a codec and a spec that agreed on a mistake would still be caught.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "needs /usr/bin/openssl"))
struct OpensslSignatureTests {
    @Test(arguments: ["valid/example.tmb", "valid/relay-three-origins.tmb", "valid/watermark.tmb"])
    func theFileSignatureVerifiesWithOpenssl(_ path: String) throws {
        let file = Vectors.bytes(path)
        let layout = try SpecReader(file)
        // §5.1: the signed message is the prefix, then SHA-256 of every byte before the SIGNATURE frame.
        let message =
            Array("tidemark-bundle-v1".utf8) + [0] + Array(SHA256.hash(data: file[..<layout.signatureFrameStart]))
        let senderKey = Array(file[12..<44])

        let verified = try Openssl.verify(message: message, signature: layout.signature, publicKey: senderKey)
        #expect(verified.status == 0, "openssl: \(verified.output)")
        #expect(verified.output.contains("Signature Verified Successfully"))

        var altered = message
        altered[altered.count - 1] ^= 0x01
        let refused = try Openssl.verify(message: altered, signature: layout.signature, publicKey: senderKey)
        #expect(refused.status != 0)
        #expect(!refused.output.contains("Signature Verified Successfully"))
    }

    @Test(arguments: ["valid/example.tmb", "valid/relay-three-origins.tmb"])
    func everyChainAttestationVerifiesWithOpenssl(_ path: String) throws {
        let layout = try SpecReader(Vectors.bytes(path))
        #expect(layout.attestations.count == layout.rangeKeys.count)
        for (attestation, key) in zip(layout.attestations, layout.rangeKeys) {
            // §2.4: the origin's replica id is the first 16 bytes of SHA-256 of its public key.
            #expect(Array(SHA256.hash(data: key).prefix(16)) == attestation.origin)
            // §5.2: prefix, origin id, sequence as 8 big-endian bytes, chain head.
            let message =
                Array("tidemark-chain-v1".utf8) + [0] + attestation.origin
                + (0..<8).map { UInt8(truncatingIfNeeded: attestation.sequence >> (56 - 8 * $0)) }
                + attestation.head
            let verified = try Openssl.verify(message: message, signature: attestation.signature, publicKey: key)
            #expect(verified.status == 0, "openssl: \(verified.output)")
            #expect(verified.output.contains("Signature Verified Successfully"))

            var altered = message
            altered[altered.count - 1] ^= 0x80
            #expect(try Openssl.verify(message: altered, signature: attestation.signature, publicKey: key).status != 0)
        }
    }
}

/// Reads just enough of a bundle, as bundle.md §3 lays it out, to find what is signed.
private struct SpecReader {
    struct AttestationFields {
        var origin: [UInt8]
        var sequence: UInt64
        var head: [UInt8]
        var signature: [UInt8]
    }
    struct Malformed: Error {}

    var signatureFrameStart = 0
    var signature: [UInt8] = []
    var rangeKeys: [[UInt8]] = []
    var attestations: [AttestationFields] = []

    init(_ file: [UInt8]) throws {
        guard file.count >= 44, Array(file[0..<8]) == [0x89, 0x54, 0x4D, 0x42, 0x0D, 0x0A, 0x1A, 0x0A] else {
            throw Malformed()
        }
        var at = 44
        // §3.2: type, flags, 4-byte big-endian length, payload; the SIGNATURE frame (0x7F) is last.
        while at + 6 <= file.count {
            let type = file[at]
            let flags = file[at + 1]
            let length = file[at + 2..<at + 6].reduce(0) { $0 << 8 | Int($1) }
            guard at + 6 + length <= file.count else { throw Malformed() }
            let payload = Array(file[at + 6..<at + 6 + length])
            switch type {
            case 0x01:
                guard flags == 0 else { throw Malformed() }
                rangeKeys = try Self.rangeKeys(ofHeader: payload)
            case 0x03:
                guard flags == 0 else { throw Malformed() }
                var p = Cursor(payload)
                attestations.append(
                    AttestationFields(
                        origin: try p.take(16), sequence: try p.varint(), head: try p.take(32),
                        signature: try p.take(64)))
            case 0x7f:
                signatureFrameStart = at
                signature = payload
                guard at + 6 + length == file.count, length == 64 else { throw Malformed() }
                return
            default: break
            }
            at += 6 + length
        }
        throw Malformed()
    }

    /// §3.3: skips to the origin ranges and returns their public keys.
    static func rangeKeys(ofHeader payload: [UInt8]) throws -> [[UInt8]] {
        var p = Cursor(payload)
        _ = try p.take(1)  // kind
        _ = try p.take(Int(try p.varint()))  // sender name
        _ = try p.varint()  // created
        for _ in 0..<2 {  // since, through
            for _ in 0..<(try p.varint()) {
                _ = try p.take(16)
                _ = try p.varint()
            }
        }
        for _ in 0..<(try p.varint()) {  // tables
            _ = try p.take(Int(try p.varint()))
            for _ in 0..<2 {
                for _ in 0..<(try p.varint()) { _ = try p.take(Int(try p.varint())) }
            }
        }
        var keys: [[UInt8]] = []
        for _ in 0..<(try p.varint()) {
            keys.append(try p.take(32))
            _ = try p.varint()
            _ = try p.varint()
            _ = try p.take(32)
        }
        return keys
    }

    struct Cursor {
        let bytes: [UInt8]
        var at = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        mutating func take(_ n: Int) throws -> [UInt8] {
            guard n >= 0, at + n <= bytes.count else { throw Malformed() }
            defer { at += n }
            return Array(bytes[at..<at + n])
        }
        /// §2.2: unsigned LEB128.
        mutating func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try take(1)[0]
                guard shift < 64 else { throw Malformed() }
                value |= UInt64(b & 0x7f) << shift
                if b & 0x80 == 0 { return value }
                shift += 7
            }
        }
    }
}

/// `openssl pkeyutl -verify` on files in a temporary folder.
private enum Openssl {
    /// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the 32 key bytes follow.
    static let spkiPrefix: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]

    static func verify(message: [UInt8], signature: [UInt8], publicKey: [UInt8]) throws -> (
        status: Int32, output: String
    ) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tidemark-openssl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let pem =
            "-----BEGIN PUBLIC KEY-----\n\(Data(spkiPrefix + publicKey).base64EncodedString())\n-----END PUBLIC KEY-----\n"
        try pem.write(to: dir.appendingPathComponent("pub.pem"), atomically: false, encoding: .utf8)
        try Data(message).write(to: dir.appendingPathComponent("msg.bin"))
        try Data(signature).write(to: dir.appendingPathComponent("sig.bin"))

        let process = try ChildProcess(
            "/usr/bin/openssl",
            ["pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "msg.bin", "-sigfile", "sig.bin"],
            directory: dir.path, stderr: .standardOutput)
        let output = String(decoding: process.readOutput(), as: UTF8.self)
        return (process.waitForExit().code, output)
    }
}
