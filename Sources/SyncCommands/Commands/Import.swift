import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify and apply change bundles; each is applied wholly or not at all.")

        @OptionGroup var store: StoreOptions
        @OptionGroup var key: KeyOptions

        @Argument(help: ArgumentHelp("Bundle files, applied in the order given.", valueName: "file"))
        var files: [String]

        func run() throws {
            let opened = try store.open()
            // Needed only to open encrypted files.
            let key = try key.loadIfPresent(forStore: try store.path)
            for file in files {
                let summary = try opened.importBundle(at: file, key: key)
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
}
