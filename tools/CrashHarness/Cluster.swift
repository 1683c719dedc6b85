import Foundation

/// The replicas under test: stores made by `sync init` in one working folder, trusting each other,
/// sharing one exchange folder.
struct Cluster {
    /// One replica's store.
    struct Member {
        /// The replica's name (`r0`, `r1`, …).
        var name: String
        /// The store file.
        var store: String
    }

    /// The tracked table every trial writes: each write transaction inserts several rows sharing
    /// one `tag`, so a partly applied transaction shows as a tag with too few rows.
    static let schema =
        "CREATE TABLE items(id TEXT PRIMARY KEY, tag TEXT NOT NULL, n INTEGER NOT NULL, payload TEXT NOT NULL);"

    let sync: String
    let directory: String
    let members: [Member]

    /// The exchange folder all replicas push to and pull from.
    var shared: String { directory + "/shared" }
    /// Where `import` trials find the bundles they import (outside the exchange folder).
    var exports: String { directory + "/exports" }
    /// Where child processes' output goes.
    var scratch: String { directory + "/scratch" }

    /// Creates `count` replicas under `directory` with `sync init`, and makes each trust the others.
    init(sync: String, directory: String, count: Int) throws {
        self.sync = sync
        self.directory = directory
        members = (0..<count).map { Member(name: "r\($0)", store: directory + "/r\($0).db") }
        for folder in [directory, shared, exports, scratch] {
            do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
                throw HarnessError.cannotPrepare(path: folder, reason: "\(error)")
            }
        }
        let schemaFile = directory + "/schema.sql"
        do { try Self.schema.write(toFile: schemaFile, atomically: false, encoding: .utf8) } catch {
            throw HarnessError.cannotPrepare(path: schemaFile, reason: "\(error)")
        }
        var publicKeys: [String] = []
        for member in members {
            try setup(
                "init \(member.name)",
                ["init", "--store", member.store, "--replica", member.name, "--schema", schemaFile])
            let identity = try setup("identity \(member.name)", ["identity", "--store", member.store])
            publicKeys.append(
                String(identity.stdout.split(separator: " ").last ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            )
        }
        for member in members {
            for (other, key) in zip(members, publicKeys) where other.name != member.name {
                try setup(
                    "trust \(other.name) from \(member.name)",
                    ["peers", "add", "--store", member.store, other.name, key])
            }
        }
    }

    /// A `sync` child process with these arguments.
    func command(_ arguments: [String]) -> ChildProcess {
        ChildProcess(executable: sync, arguments: arguments, scratch: scratch)
    }

    /// Runs `sync ARGUMENTS…` to completion.
    func run(_ arguments: [String]) throws -> ChildProcess.Result {
        try command(arguments).run()
    }

    @discardableResult
    private func setup(_ step: String, _ arguments: [String]) throws -> ChildProcess.Result {
        let result = try run(arguments)
        guard result.succeeded else { throw HarnessError.setupFailed(step: step, result: result.description) }
        return result
    }
}
