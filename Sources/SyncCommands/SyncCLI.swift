import ArgumentParser
import Foundation
import Tidemark

/// The `sync` command: the root of every subcommand.
public struct SyncCLI: AsyncParsableCommand {
    /// The command's name, abstract and subcommands.
    public static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Tidemark: history-tracked SQLite stores that sync through shared folders.",
        subcommands: [
            Demo.self, Init.self, Exec.self, Migrate.self, Log.self, Token.self, Status.self, Watch.self,
            Identity.self, Peers.self, Encryption.self,
            Export.self, Inspect.self, Import.self, Push.self, Pull.self, Prune.self, Conflicts.self,
        ])

    /// Creates the root command (argument-parser calls this).
    public init() {}

    /// Parses `arguments`, runs the command, and returns the exit code. Failures print one line
    /// `error: …` to standard error, and a hint on the next line when there is one.
    public static func run(_ arguments: [String]) async -> Int32 {
        var storePath: String?
        do {
            var command = try parseAsRoot(arguments)
            storePath = Self.storePath(of: command)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch {
            return report(error, storePath: storePath)
        }
    }

    /// The store a parsed command works on, when it has a `--store` option (or `SYNC_STORE`).
    static func storePath(of command: any ParsableCommand) -> String? {
        try? (command as? any StoreCommand)?.store.path
    }

    /// Prints `error` as one `error:` line and an optional `hint:` line; returns the exit code.
    /// A SQLite error that reaches here unexplained is first turned into the `StoreError` that
    /// names the store and the cause (locked, read-only, disk full, I/O error).
    static func report(_ error: any Error, storePath: String? = nil) -> Int32 {
        if let mapped = StoreError(sqliteError: error, path: storePath ?? "the store") { return report(mapped) }
        switch error {
        case is StoreError, is ExchangeError, is CLIError, is History.TokenError:
            Output.error("error: \(CLIWording.message(for: error))")
            if let hint = CLIWording.hint(for: error) { Output.error("hint: \(hint)") }
            return 1
        default:
            let code = exitCode(for: error)
            if code == .success {
                // --help and --version.
                Output.line(fullMessage(for: error))
                return 0
            }
            let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            Output.error("error: \(message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message)")
            Output.error("hint: see `sync help` or `sync COMMAND --help`")
            return code.rawValue
        }
    }
}
