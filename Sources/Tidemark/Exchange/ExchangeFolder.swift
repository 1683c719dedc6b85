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

/// The layout of a shared exchange folder (Protocol/exchange.md).
///
/// Each replica writes only inside `DIR/<replica id>/`: numbered bundles `0000000001.tmb`, … and
/// its signed watermark `watermark.tmw`, and after a prune its latest snapshot `snapshot.tms`. Files are written under a `.tmp-` name in the same
/// folder and then renamed, so readers never see a partial file under a final name, and a bundle
/// is never rewritten. Cloud drives that sync files without locks are enough.
struct ExchangeFolder {
    /// The shared folder.
    let root: String

    static let bundleExtension = "tmb"
    static let watermarkName = "watermark.tmw"
    static let snapshotName = "snapshot.tms"
    static let temporaryPrefix = ".tmp-"

    init(_ root: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ExchangeError.cannotRead(path: root, reason: Self.notAFolder(root))
        }
        // Every use of the folder goes through it: without search permission nothing inside can be reached.
        if access(root, X_OK) != 0 { throw ExchangeError.readFailed(path: root, FileFault(errno: errno)) }
        self.root = root
    }

    static func notAFolder(_ path: String) -> String {
        FileManager.default.fileExists(atPath: path) ? "it is a file, not a folder" : "no such folder"
    }

    func folder(of replica: Replica.ID) -> String { root + "/" + replica.description }

    /// The replica folders present, excluding `except`. Throws `readFailed` when the shared folder
    /// or one of those replica folders cannot be listed: skipping it would silently miss bundles.
    func replicaFolders(except: Replica.ID) throws -> [Replica.ID] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: root) } catch {
            throw ExchangeError.readFailed(path: root, FileFault(error))
        }
        let replicas = names.compactMap(Replica.ID.init(hex:)).filter { $0 != except }.sorted()
        for replica in replicas {
            let folder = folder(of: replica)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue
            else { continue }
            if access(folder, R_OK | X_OK) != 0 {
                throw ExchangeError.readFailed(path: folder, FileFault(errno: errno))
            }
        }
        return replicas
    }

    /// The numbered bundles in a replica's folder, in order.
    func bundles(of replica: Replica.ID) -> [(number: Int, path: String)] {
        let folder = folder(of: replica)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { name -> (Int, String)? in
            guard name.hasSuffix("." + Self.bundleExtension), !name.hasPrefix("."),
                let number = Int(name.dropLast(Self.bundleExtension.count + 1)), number > 0
            else { return nil }
            return (number, folder + "/" + name)
        }.sorted { $0.0 < $1.0 }
    }

    /// Files in a replica's folder that are neither bundles, its watermark nor its snapshot:
    /// temporaries still being written, and anything foreign. Hidden system files (other than
    /// temporaries) are left alone.
    func strayFiles(of replica: Replica.ID) -> [String] {
        let folder = folder(of: replica)
        let known = Set(
            bundles(of: replica).map { URL(fileURLWithPath: $0.path).lastPathComponent } + [
                Self.watermarkName, Self.snapshotName,
            ])
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { name in
            !known.contains(name) && (name.hasPrefix(Self.temporaryPrefix) || !name.hasPrefix("."))
        }.sorted().map { folder + "/" + $0 }
    }

    /// How long a temporary file must have gone unwritten to count as abandoned: left by a write
    /// that was interrupted (a killed process, a crash). A writer streams into its temporary
    /// without pauses this long, so removing an abandoned one cannot cut a live write short.
    static let abandonedTemporaryAge: TimeInterval = 600

    /// Whether `path` is a temporary file nobody has written to for `abandonedTemporaryAge`.
    static func isAbandonedTemporary(_ path: String, now: Date = Date()) -> Bool {
        guard URL(fileURLWithPath: path).lastPathComponent.hasPrefix(temporaryPrefix),
            let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let modified = attributes[.modificationDate] as? Date
        else { return false }
        return now.timeIntervalSince(modified) >= abandonedTemporaryAge
    }

    /// Removes the abandoned temporaries of `replica`'s own folder (only their writer removes
    /// them), and returns their paths.
    @discardableResult
    func removeAbandonedTemporaries(of replica: Replica.ID) -> [String] {
        let folder = folder(of: replica)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.map { folder + "/" + $0 }.filter { path in
            Self.isAbandonedTemporary(path) && (try? FileManager.default.removeItem(atPath: path)) != nil
        }
    }

    static func bundleName(_ number: Int) -> String { String(format: "%010d.%@", number, bundleExtension) }

    /// Reads only the preamble and header of a bundle (decrypting its first chunk when it is
    /// encrypted, with `identity`), and says whether it was encrypted.
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

    /// Publishes `temporary` under `name` in `folder` without ever replacing an existing file:
    /// returns false if `name` is taken.
    static func publish(_ temporary: String, as name: String, in folder: String) -> Bool {
        let final = folder + "/" + name
        if link(temporary, final) == 0 {
            unlink(temporary)
            return true
        }
        return false
    }
}
