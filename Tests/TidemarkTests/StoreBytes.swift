import Foundation

/// A store's files, byte for byte (the database and its WAL).
struct StoreBytes: Equatable {
    var files: [String: Data]

    init(_ path: String) throws {
        var files: [String: Data] = [:]
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            files[suffix] = try Data(contentsOf: URL(fileURLWithPath: path + suffix))
        }
        self.files = files
    }
}
