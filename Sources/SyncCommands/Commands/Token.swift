import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the store's current history token (one line, for --since).")

        @OptionGroup var store: StoreOptions

        func run() throws {
            Output.line(try store.open().currentToken().description)
        }
    }
}
