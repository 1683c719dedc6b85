import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify and apply change bundles; each is applied wholly or not at all.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var key: KeyOptions

        @Argument(
            help: ArgumentHelp(
                "Bundle files, applied in the order given; one that needs another given after it is applied after it.",
                valueName: "file"))
        var files: [String]

        func run() throws {
            let opened = try store.open()
            // Needed only to open encrypted files.
            let key = try key.loadIfPresent(forStore: try store.path)
            // A file whose prerequisites a later one provides waits for it: the files still
            // waiting are tried again while a pass applies any. A file refused for itself does
            // not stop the others; the command fails at the end, naming it.
            var pending = files
            var refused: [String: any Error] = [:]
            var progress = true
            while progress && !pending.isEmpty {
                progress = false
                var waiting: [String] = []
                for file in pending {
                    do {
                        Self.report(file, try opened.importBundle(at: file, key: key))
                        refused[file] = nil
                        progress = true
                    } catch let error as ExchangeError {
                        refused[file] = error
                        if case .missingPrerequisites = error { waiting.append(file) }
                    }
                }
                pending = waiting
            }
            let failed = files.filter { refused[$0] != nil }
            if let first = failed.first {
                throw CLIError.notApplied(first: refused[first]!, others: Array(failed.dropFirst()))
            }
        }

        static func report(_ file: String, _ summary: Store.ImportSummary) {
            for version in summary.adoptedVersions { Output.line("\(file): \(SchemaWording.tookOn(version))") }
            if let version = summary.waitingFor {
                Output.line("\(file): \(SchemaWording.held(version))")
            } else if summary.alreadyApplied {
                Output.line("\(file): already applied, nothing changed")
            } else {
                Output.line(
                    "\(file): applied \(summary.appliedTransactions) transactions, \(summary.appliedChanges) changes from \(summary.sender)"
                )
            }
        }
    }
}
