import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print transactions as they commit, from any process, until interrupted.")

        @OptionGroup var store: StoreOptions

        @Option(help: ArgumentHelp("Start after this token instead of now.", valueName: "token"))
        var since: String?

        @Flag(help: "Print each transaction as a JSON object on one line.")
        var json = false

        func run() async throws {
            let opened = try store.open()
            let start = try since.map(TokenArgument.parse)
            for try await transaction in opened.transactions(after: start) {
                Output.line(json ? HistoryFormatter.json(transaction).text : HistoryFormatter.summary(transaction))
            }
        }
    }
}
