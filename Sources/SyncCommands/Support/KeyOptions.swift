import ArgumentParser
import Foundation
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

    /// The key given with `--key`, or the store's default key file when it exists; nil otherwise.
    /// For commands that need a key only to open encrypted files.
    func loadIfPresent(forStore storePath: String) throws -> KeyFile? {
        let chosen = path ?? KeyFile.defaultPath(forStore: storePath)
        guard path != nil || FileManager.default.fileExists(atPath: chosen) else { return nil }
        return try KeyFile.load(chosen)
    }
}
