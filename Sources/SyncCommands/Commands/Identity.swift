import ArgumentParser
import Foundation
import Tidemark

struct Identity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print this replica's name and public key, for peers to trust (`sync peers add`).")

    @OptionGroup var store: StoreOptions

    func run() throws {
        let opened = try store.open()
        Output.line("\(opened.replica.name) \(Data(opened.publicKey).base64EncodedString())")
    }
}
