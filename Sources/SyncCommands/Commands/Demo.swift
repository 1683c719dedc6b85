import ArgumentParser
import Foundation

extension SyncCLI {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sync three replicas through a folder on an embedded example, and check they agree.")

        @Option(
            help: ArgumentHelp(
                "Where to create the replicas and the exchange folder (default: a new temporary folder).",
                valueName: "dir")
        )
        var dir: String?

        func run() throws {
            let directory = dir ?? (NSTemporaryDirectory() + "tidemark-demo-\(UUID().uuidString.prefix(8))")
            if FileManager.default.fileExists(atPath: directory),
                !((try? FileManager.default.contentsOfDirectory(atPath: directory).isEmpty) ?? false)
            {
                throw CLIError.invalidValue(option: "--dir", value: directory, reason: "the folder is not empty")
            }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let ok = try DemoScenario(directory: directory, say: Output.line).run()
            if !ok { throw ExitCode.failure }
        }
    }
}
