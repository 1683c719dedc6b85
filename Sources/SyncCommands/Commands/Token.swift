import ArgumentParser
import Tidemark

struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Print the store's current history token (one line, for --since).")

    @OptionGroup var store: StoreOptions

    func run() throws {
        Output.line(try store.open().currentToken().description)
    }
}
