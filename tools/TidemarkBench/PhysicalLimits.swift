import Foundation

/// The physical limits an exchange is read against, besides SQLite's own writes of the same rows
/// (`PlainDatabase.timedTransaction`): no exchange moves its file faster than a copy of that file.
enum PhysicalLimits {
    /// Seconds to copy the file at `source` to `destination`: read whole, written and synced, as
    /// an export writes a bundle. The copy is removed after.
    static func copySeconds(_ source: String, to destination: String) throws -> Double {
        try? FileManager.default.removeItem(atPath: destination)
        let seconds = try timed {
            let data = try Data(contentsOf: URL(fileURLWithPath: source))
            _ = FileManager.default.createFile(atPath: destination, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: destination))
            defer { try? handle.close() }
            try handle.write(contentsOf: data)
            try handle.synchronize()
        }.seconds
        try FileManager.default.removeItem(atPath: destination)
        return seconds
    }
}
