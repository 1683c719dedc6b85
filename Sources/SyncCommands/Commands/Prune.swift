import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Prune: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove history and own exchange files that every active member has applied.",
            discussion: "Prints the horizon it used and what it removed; names the members that hold history back.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var key: KeyOptions

        @OptionGroup var exchange: ExchangeOptions

        @Flag(help: "Say what would be removed without removing it.")
        var dryRun = false

        @Option(
            help: ArgumentHelp(
                "Retire members whose last watermark is older than this first (e.g. 30d, 12h, 90m).",
                valueName: "duration")
        )
        var maxLag: String?

        func run() throws {
            let opened = try store.open()
            let lag = try maxLag.map(Durations.parse)
            let report = try opened.prune(
                dryRun: dryRun, maxLag: lag, key: try? key.load(forStore: try store.path), settings: exchange.settings)
            for warning in report.warnings { Output.error("warning: \(CLIWording.words(warning))") }
            let verb = dryRun ? "would remove" : "removed"
            for name in report.retired {
                Output.line("\(dryRun ? "would retire" : "retired") \(name) (no watermark within \(maxLag!))")
            }
            Output.line("horizon  \(report.horizon)")
            Output.line(
                "\(verb) \(report.removedTransactions) history transactions, \(report.removedFiles.count) exchange files"
            )
            for file in report.removedFiles { Output.line("  \(file)") }
            for snapshot in report.snapshots { Output.line("\(dryRun ? "would write" : "wrote") snapshot \(snapshot)") }
            for folder in report.heldBackByFolders {
                Output.line(
                    "held back by folder \(folder): this replica's latest transactions are not pushed there yet (`sync push --to \(folder)`)"
                )
            }
            if !report.blockers.isEmpty {
                Output.line(
                    "held back by: \(report.blockers.joined(separator: ", ")) (retire a member that stopped syncing with `sync peers retire NAME`)"
                )
            }
        }
    }
}
