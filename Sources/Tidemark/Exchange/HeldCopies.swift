import Foundation
import TidemarkCore

/// Copies of the bundles held in a store that it can apply now (it has made the version they
/// need), as files a pull imports like the folder's; removed
/// when the pull ends. A held bundle leaves the store when it applies.
struct HeldCopies {
    let store: Store
    let directory: String?
    /// File path to digest.
    private let digests: [String: [UInt8]]
    /// File path to whether the bundle came encrypted.
    private let encrypted: [String: Bool]

    init(store: Store) throws {
        self.store = store
        // Only those the store can apply now: one waiting for a version the store has not made
        // would only be verified again and held again, and one of a version the store made
        // otherwise refused again as a fork, under the name of its copy.
        let bundles = try store.mappingErrors { try store.database.read { db in try HeldBundles.applicable(db) } }
        guard !bundles.isEmpty else {
            directory = nil
            digests = [:]
            encrypted = [:]
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tidemark-held-\(UUID().uuidString)"
        ).path
        // The copies are in clear (what came encrypted too): only this user may read them.
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ExchangeError.cannotWrite(path: directory, reason: FileProblem.describe(path: directory))
        }
        var digests: [String: [UInt8]] = [:]
        var encrypted: [String: Bool] = [:]
        for (n, bundle) in bundles.enumerated() {
            let path = directory + "/held-\(n + 1)-v\(bundle.position).tmb"
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(bundle.bytes), attributes: [.posixPermissions: 0o600])
            else {
                throw ExchangeError.cannotWrite(path: path, reason: FileProblem.describe(path: path))
            }
            digests[path] = bundle.digest
            encrypted[path] = bundle.encrypted
        }
        self.directory = directory
        self.digests = digests
        self.encrypted = encrypted
    }

    /// Whether `path` is one of the copies: a held bundle may be a snapshot, where a numbered
    /// bundle of the folder may not.
    func holds(_ path: String) -> Bool { digests[path] != nil }

    /// For one of the copies, whether its bundle came encrypted; nil for any other path.
    func cameEncrypted(_ path: String) -> Bool? { encrypted[path] }

    /// The copies, in the order they were held.
    var paths: [String] { digests.keys.sorted { $0.localizedStandardCompare($1) == .orderedAscending } }

    /// Forgets the held bundle copied to `path`: the store already has everything it carries.
    func release(_ path: String) throws {
        guard let digest = digests[path] else { return }
        try store.mappingErrors { try store.database.write { db in try HeldBundles.release(db, digest: digest) } }
    }

    /// Removes the copies.
    func remove() {
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }
}
