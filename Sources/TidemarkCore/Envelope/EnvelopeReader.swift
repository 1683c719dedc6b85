import Crypto
import Foundation

/// Reads the plaintext of an age file (Protocol/encryption.md §3) from `Inner`, one 64 KiB chunk
/// at a time, checking each chunk before any of its bytes is returned. The whole header, its MAC
/// included, is checked when the reader is created.
public struct EnvelopeReader<Inner: ByteSource>: ByteSource {
    private var inner: Inner
    private var buffer: [UInt8] = []
    private var position = 0
    private let payloadKey: SymmetricKey
    private var plaintext: [UInt8] = []
    private var offset = 0
    private var counter: UInt64 = 0
    private var done = false
    /// How many recipient stanzas the header has.
    public let recipientCount: Int

    /// Opens the file `inner` reads with `identity`, the reading replica's X25519 key.
    public init(_ inner: Inner, identity: Curve25519.KeyAgreement.PrivateKey) throws {
        self.inner = inner
        let (stanzas, macOffset, mac) = try Self.readHeader(&self.inner, &buffer, &position)
        recipientCount = stanzas.count
        let ours = Array(identity.publicKey.rawRepresentation)
        var fileKey: SymmetricKey?
        for stanza in stanzas where stanza.type == Envelope.x25519Type {
            guard stanza.arguments.count == 1, let share = Envelope.unbase64(stanza.arguments[0]), share.count == 32,
                stanza.body.count == 32
            else { throw EnvelopeError.badHeader("malformed X25519 stanza") }
            guard let peer = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: share),
                let shared = try? identity.sharedSecretFromKeyAgreement(with: peer)
            else { continue }
            // age: a share that makes the shared secret zero is a header failure.
            guard !Envelope.isZero(shared) else { throw EnvelopeError.lowOrderKey }
            let wrapKey = Envelope.wrapKey(shared: shared, share: share, recipient: ours)
            let zero = try ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12))
            guard
                let box = try? ChaChaPoly.SealedBox(
                    nonce: zero, ciphertext: stanza.body.prefix(16), tag: stanza.body.suffix(16)),
                let key = try? ChaChaPoly.open(box, using: wrapKey)
            else { continue }
            fileKey = SymmetricKey(data: key)
            break
        }
        guard let fileKey else { throw EnvelopeError.notARecipient(stanzas: stanzas.count) }
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                mac, authenticating: buffer[0..<macOffset], using: Envelope.headerKey(fileKey))
        else { throw EnvelopeError.headerAltered }
        let nonce = try Self.take(16, &self.inner, &buffer, &position)
        guard nonce.count == 16 else { throw EnvelopeError.truncated(chunk: 0) }
        payloadKey = Envelope.payloadKey(fileKey, nonce: nonce)
        buffer.removeFirst(position)
        position = 0
    }

    public mutating func read(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            if offset == plaintext.count {
                if done { break }
                try nextChunk()
                continue
            }
            let n = min(count - out.count, plaintext.count - offset)
            out += plaintext[offset..<offset + n]
            offset += n
        }
        return out
    }

    /// Decrypts the next chunk. A chunk is the last one when nothing follows it.
    private mutating func nextChunk() throws {
        let sealed = Envelope.chunkSize + Envelope.tagSize
        let bytes = try Self.take(sealed + 1, &inner, &buffer, &position)
        // One byte past a full chunk says whether another follows.
        let last = bytes.count <= sealed
        let chunk = last ? bytes : Array(bytes[0..<sealed])
        if last { done = true } else { position -= 1 }
        buffer.removeFirst(position)
        position = 0
        guard chunk.count >= Envelope.tagSize, !(chunk.count == Envelope.tagSize && counter > 0) else {
            throw EnvelopeError.truncated(chunk: Int(counter))
        }
        let box = try ChaChaPoly.SealedBox(
            nonce: Envelope.chunkNonce(counter, last: last), ciphertext: chunk.dropLast(Envelope.tagSize),
            tag: chunk.suffix(Envelope.tagSize))
        guard let opened = try? ChaChaPoly.open(box, using: payloadKey) else {
            // A chunk that opens as a middle one was cut where the file ends: truncated, not altered.
            if last,
                (try? ChaChaPoly.open(
                    ChaChaPoly.SealedBox(
                        nonce: Envelope.chunkNonce(counter, last: false), ciphertext: chunk.dropLast(Envelope.tagSize),
                        tag: chunk.suffix(Envelope.tagSize)), using: payloadKey)) != nil
            {
                throw EnvelopeError.truncated(chunk: Int(counter) + 1)
            }
            throw EnvelopeError.damaged(chunk: Int(counter))
        }
        counter += 1
        plaintext = Array(opened)
        offset = 0
    }

    /// Up to `count` bytes from `position` on, reading more as needed.
    private static func take(_ count: Int, _ inner: inout Inner, _ buffer: inout [UInt8], _ position: inout Int) throws
        -> [UInt8]
    {
        while buffer.count - position < count {
            let more = try inner.read(max(count - (buffer.count - position), 64 * 1024))
            if more.isEmpty { break }
            buffer += more
        }
        let end = min(buffer.count, position + count)
        defer { position = end }
        return Array(buffer[position..<end])
    }

    struct Stanza {
        var type: String
        var arguments: [Substring]
        var body: [UInt8]
    }

    /// The stanzas, where the MAC starts (just after `---`), and the MAC.
    private static func readHeader(_ inner: inout Inner, _ buffer: inout [UInt8], _ position: inout Int) throws -> (
        [Stanza], Int, [UInt8]
    ) {
        func line() throws -> Substring {
            var bytes: [UInt8] = []
            while true {
                guard position < Envelope.maxHeaderLength else { throw EnvelopeError.badHeader("header too long") }
                let next = try take(1, &inner, &buffer, &position)
                guard let byte = next.first else { throw EnvelopeError.badHeader("the file ends inside the header") }
                if byte == 0x0A { break }
                guard (0x20...0x7E).contains(byte) else {
                    throw EnvelopeError.badHeader("a header byte is not printable")
                }
                bytes.append(byte)
            }
            return Substring(String(decoding: bytes, as: UTF8.self))
        }
        guard try line() == "age-encryption.org/v1" else { throw EnvelopeError.badHeader("wrong first line") }
        var stanzas: [Stanza] = []
        while true {
            let start = position
            let text = try line()
            if text.hasPrefix("---") {
                let parts = text.split(separator: " ", omittingEmptySubsequences: false)
                guard parts.count == 2, parts[0] == "---", let mac = Envelope.unbase64(parts[1]), mac.count == 32 else {
                    throw EnvelopeError.badHeader("malformed MAC line")
                }
                guard !stanzas.isEmpty else { throw EnvelopeError.badHeader("no recipient stanza") }
                return (stanzas, start + 3, mac)
            }
            let parts = text.split(separator: " ", omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0] == "->", parts.dropFirst().allSatisfy({ !$0.isEmpty }) else {
                throw EnvelopeError.badHeader("expected a stanza (->) or the MAC line (---)")
            }
            var body: [UInt8] = []
            while true {
                let bodyLine = try line()
                guard bodyLine.count <= 64, let bytes = Envelope.unbase64(bodyLine) else {
                    throw EnvelopeError.badHeader("malformed stanza body")
                }
                body += bytes
                if bodyLine.count < 64 { break }
            }
            stanzas.append(Stanza(type: String(parts[1]), arguments: Array(parts.dropFirst(2)), body: body))
        }
    }
}

/// A source that yields `prefix` and then what `inner` reads: for sniffing a file's first bytes.
public struct PrefixedSource<Inner: ByteSource>: ByteSource {
    private var prefix: [UInt8]
    private var inner: Inner

    /// Yields `prefix`, then `inner`'s bytes.
    public init(prefix: [UInt8], _ inner: Inner) {
        self.prefix = prefix
        self.inner = inner
    }

    public mutating func read(_ count: Int) throws -> [UInt8] {
        guard !prefix.isEmpty else { return try inner.read(count) }
        var out = Array(prefix.prefix(count))
        prefix.removeFirst(out.count)
        if out.count < count { out += try inner.read(count - out.count) }
        return out
    }
}
