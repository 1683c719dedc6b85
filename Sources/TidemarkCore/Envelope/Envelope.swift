import Crypto
import Foundation

/// The age file format (age-encryption.org/v1) that encrypted exchange files use; Protocol/encryption.md
/// is the specification and cites the age spec. Only X25519 recipient stanzas are written; a reader
/// skips stanzas of other types.
public enum Envelope {
    /// The first line of every age file, newline included.
    public static let intro = Array("age-encryption.org/v1\n".utf8)
    /// Plaintext bytes per payload chunk.
    static let chunkSize = 64 * 1024
    /// The Poly1305 tag after each chunk.
    static let tagSize = 16
    /// The stanza type of an X25519 recipient.
    static let x25519Type = "X25519"
    /// HKDF info of the X25519 stanza's wrapping key.
    static let x25519Info = Array("age-encryption.org/v1/X25519".utf8)
    /// The most header bytes a reader accepts (about 4,000 recipients).
    static let maxHeaderLength = 1 << 19

    /// Whether `prefix` (the first bytes of a file) starts an age file.
    public static func isEncrypted(_ prefix: [UInt8]) -> Bool { prefix.starts(with: intro) }

    static func headerKey(_ fileKey: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: fileKey, info: Array("header".utf8), outputByteCount: 32)
    }

    static func payloadKey(_ fileKey: SymmetricKey, nonce: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: fileKey, salt: nonce, info: Array("payload".utf8), outputByteCount: 32)
    }

    /// The wrapping key of an X25519 stanza: HKDF of the shared secret, salted with the ephemeral
    /// share and the recipient.
    static func wrapKey(shared: SharedSecret, share: [UInt8], recipient: [UInt8]) -> SymmetricKey {
        shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: share + recipient, sharedInfo: x25519Info, outputByteCount: 32)
    }

    /// Whether an X25519 result is all zeros: the peer's share or key is a low-order point, and
    /// the "shared" secret is known to everyone. Every byte is looked at, whatever they hold.
    static func isZero(_ shared: SharedSecret) -> Bool {
        shared.withUnsafeBytes { bytes in bytes.reduce(0) { $0 | $1 } == 0 }
    }

    /// The 12-byte nonce of payload chunk `counter`: 11 bytes big-endian, then 1 on the last chunk.
    static func chunkNonce(_ counter: UInt64, last: Bool) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 3)
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: counter >> UInt64(shift)))
        }
        bytes.append(last ? 1 : 0)
        return try! ChaChaPoly.Nonce(data: bytes)
    }

    static func base64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    /// Unpadded canonical base64, or nil.
    static func unbase64(_ text: Substring) -> [UInt8]? {
        guard text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "/" }), text.allSatisfy(\.isASCII)
        else { return nil }
        let padded = String(text) + String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: padded), base64(Array(data)) == text else { return nil }
        return Array(data)
    }
}
