import Foundation

/// The physical limits an exchange is read against, besides SQLite's own writes of the same rows
/// (`PlainDatabase.timedTransaction`): no exchange moves its file faster than a copy of that file.
enum PhysicalLimits {
    /// Seconds to copy the file at `source` to `destination`: read whole, written and synced, as
    /// an export writes a bundle. The copy is removed after.
    static func copySeconds(_ source: String, to destination: String) throws -> Double {
        let seconds = try timed {
            try writeSynced(try Data(contentsOf: URL(fileURLWithPath: source)), to: destination)
        }.seconds
        try FileManager.default.removeItem(atPath: destination)
        return seconds
    }

    /// Writes `data` to a new file at `path` and syncs it, as an export writes its file.
    static func writeSynced(_ data: Data, to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.write(contentsOf: data)
        try handle.synchronize()
    }
}
