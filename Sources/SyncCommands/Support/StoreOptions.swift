import ArgumentParser
import Foundation
import Tidemark

/// The `--store` option every command shares, with the `SYNC_STORE` environment variable as default.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store file (default: $SYNC_STORE).", valueName: "path"))
    var store: String?

    /// The store path, from `--store` or `SYNC_STORE`.
    var path: String {
        get throws {
            if let store, !store.isEmpty { return store }
            if let env = ProcessInfo.processInfo.environment["SYNC_STORE"], !env.isEmpty { return env }
            throw CLIError.noStore
        }
    }

    /// Opens the store.
    func open() throws -> Store { try Store.open(try path) }
}
