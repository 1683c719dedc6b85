import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Push: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write what this replica holds beyond its last push into its subfolder of a shared folder.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var key: KeyOptions

        @Option(
            help: ArgumentHelp(
                "The exchange folder: a path, or a WebDAV collection's https:// URL.", valueName: "dir|url"))
        var to: String

        @OptionGroup var exchange: ExchangeOptions

        func run() throws {
            let opened = try store.open()
            let summary = try opened.push(
                to: to, key: try key.load(forStore: try store.path), settings: exchange.settings)
            for warning in summary.warnings { Output.error("warning: \(CLIWording.words(warning))") }
            for removed in summary.removed { Output.line("removed \(removed)") }
            for version in summary.adoptedVersions { Output.line(SchemaWording.tookOn(version)) }
            if let snapshot = summary.snapshot { Output.line("wrote snapshot \(snapshot)") }
            if let path = summary.path, let export = summary.export {
                Output.line(
                    "pushed \(export.transactionCount) transactions, \(export.changeCount) changes, \(export.bytes) bytes to \(path)"
                )
            } else {
                Output.line("nothing new to push")
            }
        }
    }
}
