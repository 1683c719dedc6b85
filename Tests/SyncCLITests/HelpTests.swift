import ArgumentParser
import Testing
import TidemarkTestSupport

@testable import SyncCommands

/// `--help` for the root command and every subcommand, found from the command tree itself so a
/// new subcommand is covered without a list to update.
@Suite struct HelpTests {
    /// Every command path (`[]` for the root, `["peers", "add"]` for a nested one) with its abstract.
    static let commands: [([String], String)] = {
        func walk(_ type: any ParsableCommand.Type, _ path: [String]) -> [([String], String)] {
            let configuration = type.configuration
            let name = configuration.commandName ?? type._commandName
            let here = path.isEmpty && name == "sync" ? [] : path + [name]
            return [(here, configuration.abstract)] + configuration.subcommands.flatMap { walk($0, here) }
        }
        return walk(SyncCLI.self, [])
    }()

    @Test(arguments: commands.map(\.0))
    func helpSucceeds(command: [String]) async throws {
        let result = try await SyncProcess.run(command + ["--help"])
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        #expect(
            result.stdout.contains(
                "USAGE: sync \(command.joined(separator: " "))".trimmingCharacters(in: .whitespaces)), "\(result)")
        #expect(result.stdout.contains("--help"), "\(result)")
        let abstract = try #require(Self.commands.first { $0.0 == command }?.1)
        #expect(!abstract.isEmpty, "\(command) has no abstract")
        #expect(result.stdout.contains(String(abstract.prefix(40))), "\(command): the abstract is shown: \(result)")
    }

    @Test func rootHelpListsEverySubcommand() async throws {
        let result = try await SyncProcess.run(["--help"])
        #expect(Self.commands.count > 16, "the command tree was walked: \(Self.commands.map(\.0))")
        for (command, _) in Self.commands where command.count == 1 {
            #expect(result.stdout.contains("  \(command[0])"), "\(command[0]): \(result)")
        }
    }

    @Test(arguments: ["init", "exec", "log"])
    func helpSubcommandMatchesDashDashHelp(command: String) async throws {
        let viaHelp = try await SyncProcess.run(["help", command])
        let viaFlag = try await SyncProcess.run([command, "--help"])
        #expect(viaHelp.exitCode == 0, "\(viaHelp)")
        #expect(viaHelp.stdout == viaFlag.stdout)
    }

    /// Errors name the store a command works on: every command with a `--store` option says so
    /// by being a `StoreCommand`, which is how `SyncCLI` finds the path.
    @Test func everyCommandWithAStoreOptionIsAStoreCommand() throws {
        func walk(_ type: any ParsableCommand.Type) -> [any ParsableCommand.Type] {
            [type] + type.configuration.subcommands.flatMap(walk)
        }
        for type in walk(SyncCLI.self) where type.configuration.subcommands.isEmpty {
            let hasStore = type.helpMessage().contains("--store <")
            #expect(hasStore == (type is any StoreCommand.Type), "\(type)")
        }
    }

    @Test func anUnknownSubcommandIsOneErrorLine() async throws {
        let result = try await SyncProcess.run(["frobnicate"])
        expectFailure(result, "frobnicate")
    }
}
