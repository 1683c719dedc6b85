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

    /// Opens the store, saying on standard error when it adopted a schema change another client made.
    func open() throws -> Store {
        let store = try Store.open(try path)
        if let adopted = store.adoptedSchemaChange {
            let version = adopted.version.map { " (schema \($0))" } ?? ""
            Output.error(
                "note: adopted a schema change made outside Tidemark as a migration\(version): "
                    + SyncCLI.Migrate.describe(adopted, version: false).joined(separator: "; "))
        }
        for table in store.restoredCaptureTriggers {
            Output.error(
                "warning: the capture triggers of table '\(table)' were missing (removed by another client, or lost "
                    + "with a rebuild of the table); they are back, but writes made to it meanwhile were not recorded "
                    + "and will not replicate: `sync status` shows whether peers hold other rows")
        }
        return store
    }
}
