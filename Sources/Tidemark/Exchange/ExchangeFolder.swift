import Crypto
import Foundation
import TidemarkCore

/// The layout of an exchange folder (Protocol/exchange.md §2), over the transport that keeps it.
///
/// Each replica writes only inside `<replica id>/`: numbered bundles `0000000001.tmb`, … and its
/// signed watermark `watermark.tmw`, and once it pruned bundles that no other snapshot held, its
/// latest snapshot `snapshot.tms`. Files are published whole and a bundle is never rewritten
/// (`ExchangeTransport`), so readers never see a partial file under a final name. Cloud drives
/// that sync files without locks are enough, and so is a WebDAV server.
struct ExchangeFolder {
    let transport: any ExchangeTransport

    static let bundleExtension = "tmb"
    static let watermarkName = "watermark.tmw"
    static let snapshotName = "snapshot.tms"
    static let temporaryPrefix = ".tmp-"

    /// How much of a file a header read fetches first: a bundle's header, or an encrypted file's
    /// recipients and first chunk (Protocol/encryption.md), fit in it but for large groups.
    static let headerPrefix = 128 << 10

    /// A file of the exchange folder: in the folder of `replica`, named `name`.
    struct File: Hashable {
        var replica: Replica.ID
        var name: String
    }

    init(_ transport: any ExchangeTransport) { self.transport = transport }

    /// Where the exchange folder is, for messages.
    var location: String { transport.location }

    /// How messages name `file`.
    func address(of file: File) -> String { transport.address(of: file.name, in: file.replica.description) }

    /// The replica folders present, excluding `except`.
    func replicaFolders(except: Replica.ID) throws -> [Replica.ID] {
        try transport.folders().compactMap(Replica.ID.init(hex:)).filter { $0 != except }.sorted()
    }

    /// The numbered bundles in a replica's folder, in order.
    func bundles(of replica: Replica.ID) throws -> [(number: Int, file: File)] {
        try bundleEntries(of: replica).map { ($0.number, $0.file) }
    }

    /// The numbered bundles in a replica's folder, in order, with their validators (`ExchangeEntry`).
    func bundleEntries(of replica: Replica.ID) throws -> [(number: Int, file: File, validator: String?)] {
        try transport.files(in: replica.description).compactMap { entry -> (Int, File, String?)? in
            guard let number = Self.bundleNumber(entry.name) else { return nil }
            return (number, File(replica: replica, name: entry.name), entry.validator)
        }.sorted { $0.0 < $1.0 }
    }

    static func bundleNumber(_ name: String) -> Int? {
        guard name.hasSuffix("." + bundleExtension), !name.hasPrefix("."),
            let number = Int(name.dropLast(bundleExtension.count + 1)), number > 0
        else { return nil }
        return number
    }

    static func bundleName(_ number: Int) -> String { String(format: "%010d.%@", number, bundleExtension) }

    /// The name under which a replica relays `member`'s watermark into a folder that member does
    /// not reach (Protocol/exchange.md §3.3): `watermark-<member id>.tmw`.
    static func relayedWatermarkName(of member: Replica.ID) -> String { "watermark-\(member.description).tmw" }

    /// The member whose watermark a file named `name` relays, if it is named as a relay is.
    static func relayedMember(_ name: String) -> Replica.ID? {
        guard name.hasPrefix("watermark-"), name.hasSuffix(".tmw") else { return nil }
        let id = name.dropFirst("watermark-".count).dropLast(".tmw".count)
        guard let member = Replica.ID(hex: String(id)), relayedWatermarkName(of: member) == name else { return nil }
        return member
    }

    /// Whether `name` ends as an exchange file's name does (`.tmb`, `.tms`, `.tmw`): one of a
    /// replica's files, or a copy a sync tool made of one (`0000000003 (1).tmb`,
    /// `watermark.sync-conflict-….tmw`). A file of any other name is nothing Tidemark wrote, and
    /// is left alone (Protocol/exchange.md §6.5).
    static func hasExchangeExtension(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return [".\(bundleExtension)", ".tms", ".tmw"].contains { lowered.hasSuffix($0) }
    }

    /// Whether `replica`'s folder holds a file named `name`.
    func contains(_ name: String, of replica: Replica.ID) throws -> Bool { try entry(name, of: replica) != nil }

    /// The listing's entry for `name` in `replica`'s folder.
    func entry(_ name: String, of replica: Replica.ID) throws -> ExchangeEntry? {
        try transport.files(in: replica.description).first { $0.name == name }
    }

    /// Files in a replica's folder that are neither bundles, its watermark nor its snapshot:
    /// temporaries still being written, and anything foreign. Hidden system files (other than
    /// temporaries) are left alone. With each, whether it is an abandoned temporary.
    func strayFiles(of replica: Replica.ID, now: Date = Date()) throws -> [(file: File, abandoned: Bool)] {
        try transport.files(in: replica.description).filter { entry in
            Self.bundleNumber(entry.name) == nil && entry.name != Self.watermarkName && entry.name != Self.snapshotName
                && Self.relayedMember(entry.name) == nil
                && (entry.name.hasPrefix(Self.temporaryPrefix) || !entry.name.hasPrefix("."))
        }.map { (File(replica: replica, name: $0.name), Self.isAbandonedTemporary($0, now: now)) }
    }

    /// How long a temporary file must have gone unwritten to count as abandoned: left by a write
    /// that was interrupted (a killed process, a crash, a dropped connection). A writer streams
    /// into its temporary without pauses this long, so removing an abandoned one cannot cut a live
    /// write short.
    static let abandonedTemporaryAge: TimeInterval = 600

    /// Whether `entry` is a temporary file nobody has written to for `abandonedTemporaryAge`.
    static func isAbandonedTemporary(_ entry: ExchangeEntry, now: Date = Date()) -> Bool {
        guard entry.name.hasPrefix(temporaryPrefix), let modified = entry.modified else { return false }
        return now.timeIntervalSince(modified) >= abandonedTemporaryAge
    }

    /// Removes the abandoned temporaries of `replica`'s own folder (only their writer removes
    /// them), and returns their addresses.
    @discardableResult
    func removeAbandonedTemporaries(of replica: Replica.ID) -> [String] {
        let folder = replica.description
        let entries = (try? transport.files(in: folder)) ?? []
        return entries.filter { Self.isAbandonedTemporary($0) }.compactMap { entry in
            (try? transport.remove(entry.name, in: folder)).map { transport.address(of: entry.name, in: folder) }
        }
    }

    /// A local file with all of `file`'s bytes.
    func localPath(of file: File) throws -> String {
        try transport.localCopy(of: file.name, in: file.replica.description, prefix: nil).path
    }

    /// Reads only the preamble and header of a bundle (decrypting its first chunk when it is
    /// encrypted, with `identity`), and says whether it was encrypted. From a server, only the
    /// start of the file is fetched, unless the header runs past it.
    func header(of file: File, identity: Curve25519.KeyAgreement.PrivateKey?) throws -> (
        sender: Replica.ID, header: BundleHeader, encrypted: Bool
    ) {
        let folder = file.replica.description
        let start = try transport.localCopy(of: file.name, in: folder, prefix: Self.headerPrefix)
        do { return try Self.header(of: start.path, identity: identity) } catch let error as ExchangeError {
            guard !start.complete else { throw error.naming(start.path, as: address(of: file)) }
        }
        let whole = try transport.localCopy(of: file.name, in: folder, prefix: nil)
        do { return try Self.header(of: whole.path, identity: identity) } catch let error as ExchangeError {
            throw error.naming(whole.path, as: address(of: file))
        }
    }

    /// Reads only the preamble and header of the bundle at local `path`.
    /// The header of `file` when the replica whose folder holds it signed it; nil when another
    /// replica did.
    func signedHeader(of file: File, identity: Curve25519.KeyAgreement.PrivateKey?) throws -> BundleHeader? {
        let (sender, header, _) = try header(of: file, identity: identity)
        return sender == file.replica ? header : nil
    }

    static func header(of path: String, identity: Curve25519.KeyAgreement.PrivateKey?) throws -> (
        sender: Replica.ID, header: BundleHeader, encrypted: Bool
    ) {
        let source = try ExchangeSource(path: path, identity: identity)
        defer { source.close() }
        do {
            let decoder = try BundleDecoder(source)
            return (decoder.sender, decoder.header, source.encrypted)
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
    }

    /// Whether `file` exists and starts as a file in clear, not an age file.
    func isClear(_ file: File) -> Bool { firstBytes(of: file).map { !Envelope.isEncrypted($0) } ?? false }

    /// Whether `file` can be read and is encrypted (Protocol/encryption.md §3).
    func isEncrypted(_ file: File) -> Bool { firstBytes(of: file).map(Envelope.isEncrypted) ?? false }

    /// The first bytes of `file`, as many as an envelope's intro; nil when it cannot be read or
    /// is empty.
    private func firstBytes(of file: File) -> [UInt8]? {
        guard
            let copy = try? transport.localCopy(of: file.name, in: file.replica.description, prefix: Self.headerPrefix),
            var source = try? FileSource(path: copy.path)
        else { return nil }
        defer { source.close() }
        guard let prefix = try? source.read(Envelope.intro.count), !prefix.isEmpty else { return nil }
        return prefix
    }
}
