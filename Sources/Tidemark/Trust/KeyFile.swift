import Crypto
import Foundation
import TidemarkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A replica's Ed25519 private key in a PEM file (PKCS#8, `-----BEGIN PRIVATE KEY-----`), readable
/// by `openssl`. The file is created with mode 0600 and never enters the store, a bundle or a message.
public struct KeyFile: Sendable {
    /// Where the key lives.
    public let path: String
    /// The signing key.
    public let privateKey: Curve25519.Signing.PrivateKey

    /// The 32 raw public-key bytes.
    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }

    /// The default key path for a store: `STORE.key`.
    public static func defaultPath(forStore store: String) -> String { store + ".key" }

    // DER prefix of a PKCS#8 Ed25519 private key (RFC 8410): the 32-byte seed follows.
    static let pkcs8Prefix: [UInt8] = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]

    /// Reads a key file.
    public static func load(_ path: String) throws -> KeyFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError.keyFile(path: path, problem: "cannot be read (missing, or no permission)")
        }
        let text = String(decoding: data, as: UTF8.self)
        let body = text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        guard text.contains("-----BEGIN PRIVATE KEY-----"), let der = Data(base64Encoded: body).map(Array.init),
            der.count == pkcs8Prefix.count + 32, Array(der.prefix(pkcs8Prefix.count)) == pkcs8Prefix,
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32))
        else {
            throw StoreError.keyFile(path: path, problem: "is not an Ed25519 private key in PEM (PKCS#8)")
        }
        return KeyFile(path: path, privateKey: key)
    }

    /// Creates a new key at `path`, which must not exist, with mode 0600.
    public static func create(_ path: String) throws -> KeyFile {
        let key = Curve25519.Signing.PrivateKey()
        let der = pkcs8Prefix + Array(key.rawRepresentation)
        let pem = "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw StoreError.keyFile(path: path, problem: "cannot be created (\(String(cString: strerror(errno))))")
        }
        defer { close(fd) }
        let bytes = Array(pem.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            unlink(path)
            throw StoreError.keyFile(path: path, problem: "could not be written (\(String(cString: strerror(errno))))")
        }
        return KeyFile(path: path, privateKey: key)
    }
}
