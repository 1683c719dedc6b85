import Crypto
import Foundation

/// Encrypts one file to a set of recipients in the age format (Protocol/encryption.md §3): the
/// header first, then the payload in 64 KiB chunks as it is written. Holds at most one chunk.
public struct EnvelopeWriter {
    private let payloadKey: SymmetricKey
    private var pending: [UInt8] = []
    private var counter: UInt64 = 0
    /// The header and the payload nonce, which the caller writes before any payload.
    public let header: [UInt8]

    /// Prepares a file readable by each of `recipients` (at least one) and nobody else. Throws
    /// `EnvelopeError.lowOrderKey` for a recipient with which anyone could open the file.
    public init(recipients: [Curve25519.KeyAgreement.PublicKey]) throws {
        precondition(!recipients.isEmpty, "an envelope needs a recipient")
        let fileKey = SymmetricKey(size: .bits128)
        var text = Envelope.intro
        for recipient in recipients {
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = Array(ephemeral.publicKey.rawRepresentation)
            let shared = try ephemeral.sharedSecretFromKeyAgreement(with: recipient)
            guard !Envelope.isZero(shared) else { throw EnvelopeError.lowOrderKey }
            let wrapKey = Envelope.wrapKey(
                shared: shared, share: share, recipient: Array(recipient.rawRepresentation))
            let sealed = try fileKey.withUnsafeBytes {
                try ChaChaPoly.seal(
                    Array($0), using: wrapKey, nonce: ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12)))
            }
            let body = Array(sealed.ciphertext) + Array(sealed.tag)
            text += Array("-> \(Envelope.x25519Type) \(Envelope.base64(share))\n\(Envelope.base64(body))\n".utf8)
        }
        text += Array("---".utf8)
        let mac = HMAC<SHA256>.authenticationCode(for: text, using: Envelope.headerKey(fileKey))
        text += Array(" \(Envelope.base64(Array(mac)))\n".utf8)
        var nonce = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in nonce.indices { nonce[i] = generator.next() }
        header = text + nonce
        payloadKey = Envelope.payloadKey(fileKey, nonce: nonce)
    }

    /// Takes plaintext; returns the ciphertext of the chunks it completed (none until one is full).
    public mutating func encrypt(_ bytes: [UInt8]) throws -> [UInt8] {
        pending += bytes
        var out: [UInt8] = []
        // A full chunk waits until more follows: only then is it known not to be the last.
        var start = 0
        while pending.count - start > Envelope.chunkSize {
            out += try seal(Array(pending[start..<start + Envelope.chunkSize]), last: false)
            start += Envelope.chunkSize
        }
        if start > 0 { pending.removeFirst(start) }
        return out
    }

    /// The last chunk's ciphertext.
    public mutating func finish() throws -> [UInt8] {
        defer { pending = [] }
        return try seal(pending, last: true)
    }

    private mutating func seal(_ chunk: [UInt8], last: Bool) throws -> [UInt8] {
        defer { counter += 1 }
        let box = try ChaChaPoly.seal(chunk, using: payloadKey, nonce: Envelope.chunkNonce(counter, last: last))
        return Array(box.ciphertext) + Array(box.tag)
    }
}
