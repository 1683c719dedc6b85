import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Log: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print history transactions, oldest first.")

        @OptionGroup var store: StoreOptions

        @Option(help: ArgumentHelp("Only transactions after this token (from `sync token`).", valueName: "token"))
        var since: String?

        @Option(help: "Only transactions by this author.")
        var author: String?

        @Option(help: "Only transactions with this context name.")
        var context: String?

        @Option(help: ArgumentHelp("Only changes to this table.", valueName: "table"))
        var table: String?

        @Flag(help: "Print a JSON array.")
        var json = false

        func run() throws {
            let opened = try store.open()
            var request = HistoryRequest()
            request.after = try since.map(TokenArgument.parse)
            if let author { request.authors = [author] }
            if let context { request.contextNames = [context] }
            if let table { request.tables = [table] }
            let transactions = try opened.fetchHistory(request)
            if json {
                Output.line(JSON.lines(transactions.map(HistoryFormatter.json)).text)
            } else {
                var names = [opened.replica.id: opened.replica.name]
                for peer in try opened.peers() { names[peer.id] = peer.name }
                for transaction in transactions { Output.line(HistoryFormatter.text(transaction, names: names)) }
            }
        }
    }
}
