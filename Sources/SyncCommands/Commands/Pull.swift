import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Pull: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply every bundle in a shared folder that this replica lacks, then leave its watermark there.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var key: KeyOptions

        @Option(
            help: ArgumentHelp(
                "The exchange folder: a path, or a WebDAV collection's https:// URL.", valueName: "dir|url"))
        var from: String

        @OptionGroup var exchange: ExchangeOptions

        @Flag(help: "Do not prune after pulling.")
        var noPrune = false

        func run() throws {
            let opened = try store.open()
            let summary: Store.PullSummary
            do {
                summary = try opened.pull(
                    from: from, key: try key.load(forStore: try store.path), prune: !noPrune,
                    settings: exchange.settings)
            } catch let failed as PullFailedAfterApplying {
                // What was applied stays applied: said first, then what failed.
                Self.report(failed.imported, warnings: [], removed: [])
                throw failed.error
            }
            Self.report(summary.imported, warnings: summary.warnings, removed: summary.removed)
            for version in summary.adoptedVersions + summary.imported.flatMap(\.adoptedVersions) {
                Output.line(SchemaWording.tookOn(version))
            }
            for wait in summary.waiting { Output.line("waiting \(SchemaWording.waiting(wait))") }
            if let prune = summary.prune, prune.removedTransactions > 0 || !prune.removedFiles.isEmpty {
                Output.line(
                    "pruned \(prune.removedTransactions) history transactions, \(prune.removedFiles.count) exchange files"
                )
            }
            for snapshot in summary.prune?.snapshots ?? [] { Output.line("wrote snapshot \(snapshot)") }
            for warning in summary.prune?.warnings ?? [] { Output.error("warning: \(CLIWording.words(warning))") }
        }

        /// The lines for what a pull applied: skipped files, removed ones, snapshots, the total.
        static func report(_ imported: [Store.ImportSummary], warnings: [String], removed: [String]) {
            for warning in warnings { Output.error("warning: \(CLIWording.words(warning))") }
            for removed in removed { Output.line("removed \(removed)") }
            for snapshot in imported where snapshot.header.kind == .snapshot {
                Output.line("caught up from \(snapshot.sender)'s snapshot: \(snapshot.snapshotRows) rows")
            }
            let transactions = imported.map(\.appliedTransactions).reduce(0, +)
            let changes = imported.map(\.appliedChanges).reduce(0, +)
            Output.line("pulled \(imported.count) bundles: \(transactions) transactions, \(changes) changes")
        }
    }
}
