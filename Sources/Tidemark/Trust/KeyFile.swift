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

/// The C library's `read`, which `KeyFile`'s own `read` hides.
private enum Glue {
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.read(fd, buffer, count)
        #elseif canImport(Musl)
            Musl.read(fd, buffer, count)
        #else
            Darwin.read(fd, buffer, count)
        #endif
    }
}

/// A replica's Ed25519 private key in a PEM file (PKCS#8, `-----BEGIN PRIVATE KEY-----`), readable
/// by `openssl`. The file is created with mode 0600 and never enters the store, a bundle or a message;
/// `load` refuses it when other users may read or change it.
public struct KeyFile: Sendable {
    /// Where the key lives.
    public let path: String
    /// The signing key.
    public let privateKey: Curve25519.Signing.PrivateKey

    /// The X25519 key this replica decrypts exchange files with (Protocol/encryption.md §2).
    public var envelopeIdentity: Curve25519.KeyAgreement.PrivateKey { EnvelopeKeys.identity(of: privateKey) }

    /// The 32 raw public-key bytes.
    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }

    /// The default key path for a store: `STORE.key`.
    public static func defaultPath(forStore store: String) -> String { store + ".key" }

    // DER prefix of a PKCS#8 Ed25519 private key (RFC 8410): the 32-byte seed follows.
    static let pkcs8Prefix: [UInt8] = [
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ]

    /// Reads a key file.
    ///
    /// Refuses a file that is not an unencrypted Ed25519 key in PEM (PKCS#8) with
    /// `StoreError.keyFile`, saying what is wrong without quoting the file, and a file whose
    /// permissions let other users read or change it (`mode & 0o077 != 0`) with
    /// `StoreError.keyFileExposed`: the fix is `chmod 600 FILE`.
    public static func load(_ path: String) throws -> KeyFile {
        let (data, mode) = try read(path)
        let text = String(decoding: data, as: UTF8.self)
        let key = try parse(text, path: path)
        guard mode & 0o077 == 0 else { throw StoreError.keyFileExposed(path: path, mode: mode) }
        return KeyFile(path: path, privateKey: key)
    }

    /// The file's bytes and permission bits, read through one descriptor.
    private static func read(_ path: String) throws -> (Data, UInt16) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            let problem = errno == ENOENT ? "does not exist" : "cannot be read (\(String(cString: strerror(errno))))"
            throw StoreError.keyFile(path: path, problem: problem)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw StoreError.keyFile(path: path, problem: "cannot be read (\(String(cString: strerror(errno))))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StoreError.keyFile(path: path, problem: "is not a regular file")
        }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glue.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StoreError.keyFile(path: path, problem: "cannot be read (\(String(cString: strerror(errno))))")
            }
            if count == 0 { break }
            data.append(contentsOf: chunk[0..<count])
            // A key is a few hundred bytes; anything this large is not one.
            guard data.count <= 1 << 16 else { break }
        }
        return (data, UInt16(info.st_mode & 0o7777))
    }

    /// The key in a PEM text, or `StoreError.keyFile` saying what is wrong (never quoting the text).
    private static func parse(_ text: String, path: String) throws -> Curve25519.Signing.PrivateKey {
        func refuse(_ detail: String) -> StoreError {
            StoreError.keyFile(path: path, problem: "is not an Ed25519 private key in PEM (PKCS#8): \(detail)")
        }
        if text.allSatisfy(\.isWhitespace) { throw refuse("the file is empty") }
        guard text.contains("-----BEGIN PRIVATE KEY-----") else {
            if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
                throw refuse("it is encrypted; Tidemark needs an unencrypted key")
            }
            let kinds = [("EC", "an EC"), ("RSA", "an RSA"), ("OPENSSH", "an OpenSSH"), ("DSA", "a DSA")]
            if let (_, kind) = kinds.first(where: { text.contains("-----BEGIN \($0.0) PRIVATE KEY-----") }) {
                throw refuse("it holds \(kind) key")
            }
            throw refuse("no -----BEGIN PRIVATE KEY----- line")
        }
        let body = text.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("-----") }.joined()
        guard let der = Data(base64Encoded: body).map(Array.init) else { throw refuse("its base64 text is damaged") }
        // Same structure, another algorithm: OID 1.3.101.110 is X25519, 1.3.101.111 X448, 1.3.101.113 Ed448.
        if der.count >= 12, Array(der[7..<11]) == [0x06, 0x03, 0x2b, 0x65], der[11] != 0x70 {
            let names: [UInt8: String] = [0x6e: "an X25519", 0x6f: "an X448", 0x71: "an Ed448"]
            throw refuse("it holds \(names[der[11]] ?? "another kind of") key")
        }
        guard der.count == pkcs8Prefix.count + 32, Array(der.prefix(pkcs8Prefix.count)) == pkcs8Prefix else {
            throw refuse(
                "it holds \(der.count) bytes of DER where an Ed25519 key has \(pkcs8Prefix.count + 32), with a different structure"
            )
        }
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32)) else {
            throw refuse("the key bytes are invalid")
        }
        return key
    }

    /// Creates a new key at `path`, which must not exist, with mode 0600. The file appears whole or
    /// not at all: it is written under a temporary name beside `path` and linked into place, so a
    /// process that creates the same key file at the same moment gets `StoreError.keyFile` with
    /// `keyFileExists`, and one that loads it never reads half of it.
    public static func create(_ path: String) throws -> KeyFile {
        let key = Curve25519.Signing.PrivateKey()
        let der = pkcs8Prefix + Array(key.rawRepresentation)
        let pem = "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n"
        if FileManager.default.fileExists(atPath: path) { throw StoreError.keyFile(path: path, problem: keyFileExists) }
        let bytes = Array(pem.utf8)
        let temporary = "\(path).\(UUID().uuidString).tmp"
        try writeNewFile(temporary, bytes, keyPath: path)
        defer { unlink(temporary) }
        if link(temporary, path) != 0 {
            if errno == EEXIST { throw StoreError.keyFile(path: path, problem: keyFileExists) }
            // A file system without hard links (FAT, exFAT, some network shares): created in place.
            try writeNewFile(path, bytes, keyPath: path)
        }
        return KeyFile(path: path, privateKey: key)
    }

    /// Creates the file `file` with mode 0600 and writes `bytes` to it, synced. A file it made but
    /// could not write whole is removed. Failures name the key file `keyPath`.
    private static func writeNewFile(_ file: String, _ bytes: [UInt8], keyPath: String) throws {
        func failure(_ what: String, _ code: Int32) -> StoreError {
            StoreError.keyFile(path: keyPath, problem: "\(what) (\(String(cString: strerror(code))))")
        }
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw StoreError.keyFile(path: keyPath, problem: keyFileExists) }
            throw failure("cannot be created", errno)
        }
        let written = write(fd, bytes, bytes.count) == bytes.count && fsync(fd) == 0
        let code = errno
        close(fd)
        guard written else {
            unlink(file)
            throw failure("could not be written", code)
        }
    }

    /// The problem `create` reports when the key file is already there.
    static let keyFileExists = "already exists: a store's key is never replaced"
}
