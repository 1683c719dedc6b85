import Testing
import TidemarkTestSupport

/// `--help` for the root command and every subcommand.
@Suite struct HelpTests {
    @Test(arguments: [[], ["init"], ["exec"], ["log"], ["token"], ["status"], ["watch"], ["migrate"]])
    func helpSucceeds(command: [String]) async throws {
        let result = try await SyncProcess.run(command + ["--help"])
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        #expect(result.stdout.contains("USAGE: sync \(command.joined(separator: " "))".trimmingCharacters(in: .whitespaces)), "\(result)")
        #expect(result.stdout.contains("--help"), "\(result)")
    }

    @Test func rootHelpListsEverySubcommand() async throws {
        let result = try await SyncProcess.run(["--help"])
        for name in ["init", "exec", "log", "token", "status", "watch"] {
            #expect(result.stdout.contains("  \(name)"), "\(name): \(result)")
        }
    }

    @Test(arguments: ["init", "exec", "log"])
    func helpSubcommandMatchesDashDashHelp(command: String) async throws {
        let viaHelp = try await SyncProcess.run(["help", command])
        let viaFlag = try await SyncProcess.run([command, "--help"])
        #expect(viaHelp.exitCode == 0, "\(viaHelp)")
        #expect(viaHelp.stdout == viaFlag.stdout)
    }

    @Test func anUnknownSubcommandIsOneErrorLine() async throws {
        let result = try await SyncProcess.run(["frobnicate"])
        expectFailure(result, "frobnicate")
    }
}
