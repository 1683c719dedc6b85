import ArgumentParser
import Tidemark

/// The `--key` option of every command that signs.
struct KeyOptions: ParsableArguments {
    @Option(
        name: .customLong("key"), help: ArgumentHelp("The private key file (default: STORE.key).", valueName: "path"))
    var path: String?

    /// Loads the key for the store at `storePath`.
    func load(forStore storePath: String) throws -> KeyFile {
        try KeyFile.load(path ?? KeyFile.defaultPath(forStore: storePath))
    }
}
