import Foundation
import Tidemark

/// Replicas that trust each other and sync through one shared exchange folder: push, pull and
/// prune by name, members joining late, and what the folder holds. For pruning, retirement and
/// snapshot catch-up tests.
public final class ExchangeGroup {
    /// The temporary directory holding the stores, their keys and the folder.
    public let directory: TemporaryDirectory
    /// The shared exchange folder.
    public let folder: String
    /// The schema every replica is created with.
    public let schema: String
    /// The columns every replica preserves in tombstones.
    public let preserve: [String]
    /// The replicas, in the order they were created.
    public private(set) var replicas: [TestReplica] = []

    /// Creates one replica per name, each trusting all the others, and an empty folder.
    /// `options` gives each replica's store options (its clock, say).
    public init(
        _ names: [String], schema: String = TestReplica.schema, preserve: [String] = ["items.name"],
        options: (String) -> Store.Options = { _ in Store.Options() }
    ) throws {
        directory = try TemporaryDirectory("tidemark-prune")
        folder = directory.file("exchange")
        self.schema = schema
        self.preserve = preserve
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        replicas = try names.map {
            try TestReplica($0, in: directory, schema: schema, preserve: preserve, options: options($0))
        }
        try TestReplica.trustEachOther(replicas)
    }

    /// The replica named `name`.
    public subscript(name: String) -> TestReplica {
        guard let replica = replicas.first(where: { $0.name == name }) else {
            preconditionFailure("no replica named \(name)")
        }
        return replica
    }

    /// The replicas' names.
    public var names: [String] { replicas.map(\.name) }

    /// Creates a replica that trusts every existing member; with `trustedByAll`, they trust it too.
    /// `schema` replaces the group's (a replica created from an app's newer schema).
    @discardableResult
    public func add(
        _ name: String, trustedByAll: Bool = true, schema: String? = nil, options: Store.Options = Store.Options()
    ) throws -> TestReplica {
        let replica = try TestReplica(
            name, in: directory, schema: schema ?? self.schema, preserve: preserve, options: options)
        for other in replicas {
            try replica.trust(other)
            if trustedByAll { try other.trust(replica) }
        }
        replicas.append(replica)
        return replica
    }

    /// Replaces the replica named `name` with the same store reopened with other options.
    @discardableResult
    public func reopen(_ name: String, options: Store.Options) throws -> TestReplica {
        let index = replicas.firstIndex { $0.name == name }!
        replicas[index] = try TestReplica(opening: replicas[index].path, options: options)
        return replicas[index]
    }

    // MARK: - Exchanging

    /// `name` pushes what it holds beyond its last push.
    @discardableResult
    public func push(_ name: String) throws -> Store.PushSummary {
        let replica = self[name]
        return try replica.store.push(to: folder, key: replica.key)
    }

    /// `name` pulls everything it lacks; prunes afterwards unless `prune` is false.
    @discardableResult
    public func pull(_ name: String, prune: Bool = true) throws -> Store.PullSummary {
        let replica = self[name]
        return try replica.store.pull(from: folder, key: replica.key, prune: prune)
    }

    /// `name` prunes.
    @discardableResult
    public func prune(_ name: String, dryRun: Bool = false, maxLag: TimeInterval? = nil) throws -> Store.PruneReport {
        let replica = self[name]
        return try replica.store.prune(dryRun: dryRun, maxLag: maxLag, key: replica.key)
    }

    /// Every replica of `names` pushes, then every one pulls (in that order); returns the pulls'
    /// summaries by name.
    @discardableResult
    public func round(_ names: [String]? = nil, prune: Bool = true) throws -> [String: Store.PullSummary] {
        let names = names ?? self.names
        for name in names { try push(name) }
        var pulls: [String: Store.PullSummary] = [:]
        for name in names { pulls[name] = try pull(name, prune: prune) }
        return pulls
    }

    // MARK: - The folder

    /// A second exchange folder named `name` beside the group's, made empty.
    public func anotherFolder(_ name: String) throws -> String {
        let path = directory.file(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A replica's subfolder.
    public func folder(of name: String) -> String { folder + "/" + self[name].id.description }

    /// Every file in the folder, relative to it (`<id>/0000000001.tmb`, `<id>/watermark.tmw`, …).
    public var files: [String] { FolderTree(folder).files }

    /// The numbered bundles in the folder, as absolute paths.
    public var bundles: [String] { files.filter { $0.hasSuffix(".tmb") }.map { folder + "/" + $0 } }

    /// The snapshots in the folder, as absolute paths.
    public var snapshots: [String] { files.filter { $0.hasSuffix("/snapshot.tms") }.map { folder + "/" + $0 } }

    /// The header of a bundle, snapshot or watermark file (verified; decrypted with `key` when encrypted).
    public static func header(of path: String, key: KeyFile? = nil) throws -> BundleHeader {
        try Store.inspectBundle(at: path, key: key) { _, _ in }.header
    }

    /// The `through` token of a bundle, snapshot or watermark file (verified).
    public static func through(of path: String, key: KeyFile? = nil) throws -> History.Token {
        try header(of: path, key: key).through
    }

    /// The bundles in the folder that some replica of `names` has not applied (its current token
    /// does not cover the bundle's `through`); `key` opens encrypted ones.
    public func bundlesNeeded(by names: [String], key: KeyFile? = nil) throws -> [String] {
        let tokens = try names.map { try self[$0].store.currentToken() }
        return try bundles.filter { bundle in
            let through = try Self.through(of: bundle, key: key)
            return tokens.contains { !$0.covers(through) }
        }
    }

    // MARK: - Comparing

    /// Pairs of replicas whose tracked tables (membership included) differ, with the differences.
    public func tableDifferences(_ names: [String]? = nil) throws -> [String] {
        let names = names ?? self.names
        let first = try self[names[0]].tables()
        var lines: [String] = []
        for name in names.dropFirst() {
            lines += first.differences(from: try self[name].tables(), mine: names[0], theirs: name)
        }
        return lines
    }

    /// The member named `member` as `observer` sees it (`members()`), matched by identity.
    public func member(_ member: String, seenBy observer: String) throws -> Store.Member? {
        let id = self[member].id
        return try self[observer].store.members().first { $0.id == id }
    }
}
