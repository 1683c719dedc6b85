import Foundation

/// Runs the built `sync` executable, as a user would from a shell.
public enum SyncProcess {
    /// The `sync` binary built next to the running test executable (SwiftPM puts every product of a
    /// build configuration in one folder). `TIDEMARK_SYNC_BINARY` overrides it.
    public static let path: String = {
        if let override = ProcessInfo.processInfo.environment["TIDEMARK_SYNC_BINARY"], !override.isEmpty {
            return override
        }
        return productsDirectory + "/sync"
    }()

    /// The folder holding the build's products: on Linux the test executable's own folder; on
    /// Darwin the folder holding the `.xctest` bundle.
    public static let productsDirectory: String = {
        #if os(Linux)
            let executable =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            return URL(fileURLWithPath: executable).deletingLastPathComponent().path
        #else
            if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
                return URL(fileURLWithPath: bundle.bundlePath).deletingLastPathComponent().path
            }
            return Bundle.main.bundleURL.deletingLastPathComponent().path
        #endif
    }()

    /// The environment children get: this process's, without `SYNC_STORE` (so a developer's own
    /// setting cannot leak into a test), plus `extra`.
    public static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SYNC_STORE"] = nil
        return environment.merging(extra) { $1 }
    }

    /// Runs `sync ARGUMENTS…` to completion.
    public static func run(_ arguments: [String], environment extra: [String: String] = [:], stdin: String? = nil)
        async throws
        -> CommandResult
    {
        try await CommandRunner.run(path, arguments, environment: environment(extra), stdin: stdin)
    }
}

/// Runs the `sqlite3` shell: a foreign SQLite client in its own process, with no Tidemark code.
public enum SQLiteShell {
    /// The shell's path.
    public static let path = "/usr/bin/sqlite3"

    /// Runs `sqlite3 STORE SQL` (with a 10 s busy timeout) and returns its result.
    public static func run(_ store: String, _ sql: String) async throws -> CommandResult {
        try await CommandRunner.run(path, ["-cmd", ".timeout 10000", store, sql])
    }

    /// Runs SQL and fails unless the shell exits 0 with nothing on standard error; returns stdout.
    @discardableResult
    public static func execute(_ store: String, _ sql: String) async throws -> String {
        let result = try await run(store, sql)
        guard result.exitCode == 0, result.stderr.isEmpty else {
            throw Failure(command: "sqlite3 \(store) \(sql)", result: result)
        }
        return result.stdout
    }

    /// The store's `.dump`: its schema and every row, as SQL text, for before/after comparisons.
    public static func dump(_ store: String) async throws -> String {
        try await execute(store, ".dump")
    }

    /// A shell command that did not succeed.
    public struct Failure: Error, CustomStringConvertible {
        /// The command line.
        public var command: String
        /// What it returned.
        public var result: CommandResult
        public var description: String { "\(command) failed: \(result)" }
    }
}

extension SyncProcess {
    /// Starts `sync ARGUMENTS…` and leaves it running (for `watch`); stop it with `stop()`.
    public static func start(_ arguments: [String], environment extra: [String: String] = [:]) throws -> RunningCommand
    {
        try RunningCommand(path, arguments, environment: environment(extra))
    }
}
