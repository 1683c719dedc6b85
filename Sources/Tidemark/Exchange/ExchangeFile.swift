import Crypto
import Foundation
import TidemarkCore

/// Reads an exchange file, decrypting it when it is an age file (Protocol/encryption.md), so every
/// reader of bundles, snapshots and watermarks sees the same plaintext bundle.
struct ExchangeSource: ByteSource {
    private let file: FileSource
    private var envelope: EnvelopeReader<PrefixedSource<FileSource>>?
    private var clear: PrefixedSource<FileSource>?
    private let path: String
    /// Whether the file was encrypted.
    let encrypted: Bool

    /// Opens `path`; an encrypted file needs `identity`, the reading replica's X25519 key.
    init(path: String, identity: Curve25519.KeyAgreement.PrivateKey?) throws {
        var file = try FileSource(path: path)
        self.file = file
        self.path = path
        do {
            let prefix = try file.read(Envelope.intro.count)
            encrypted = Envelope.isEncrypted(prefix)
            if encrypted {
                guard let identity else { throw ExchangeError.encryptedWithoutKey(path: path) }
                envelope = try EnvelopeReader(PrefixedSource(prefix: prefix, file), identity: identity)
            } else {
                clear = PrefixedSource(prefix: prefix, file)
            }
        } catch let error as EnvelopeError {
            file.close()
            throw ExchangeError.badEnvelope(path: path, error)
        } catch {
            file.close()
            throw error
        }
    }

    mutating func read(_ count: Int) throws -> [UInt8] {
        do {
            if envelope != nil { return try envelope!.read(count) }
            return try clear!.read(count)
        } catch let error as EnvelopeError {
            throw ExchangeError.badEnvelope(path: path, error)
        }
    }

    func close() { file.close() }
}

/// Writes an exchange file, encrypted for the group's readers when it encrypts. Like `FileSink`,
/// it removes the partial file when writing fails.
final class ExchangeSink: ByteSink {
    private let file: FileSink
    private var envelope: EnvelopeWriter?

    /// Creates (or truncates) `path`.
    init(path: String) throws {
        file = try FileSink(path: path)
    }

    /// Makes the file an age file readable by `recipients`, or leaves it in clear when nil. The
    /// caller decides in the transaction it reads the content in, so the setting and the content
    /// agree (Protocol/encryption.md §1.3). Before any other write.
    func encrypt(for recipients: [Curve25519.KeyAgreement.PublicKey]?) throws {
        precondition(file.bytesWritten == 0 && envelope == nil, "encrypt before writing")
        guard let recipients else { return }
        let writer = try EnvelopeWriter(recipients: recipients)
        try file.write(writer.header)
        envelope = writer
    }

    /// The bytes written to the file so far.
    var bytesWritten: Int { file.bytesWritten }

    func write(_ bytes: [UInt8]) throws {
        if envelope != nil { try file.write(try envelope!.encrypt(bytes)) } else { try file.write(bytes) }
    }

    /// Writes the last encrypted chunk, forces the file to disk and closes it.
    func close() throws {
        if envelope != nil { try file.write(try envelope!.finish()) }
        try file.close()
    }
}
