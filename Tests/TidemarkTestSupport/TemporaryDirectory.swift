import Foundation

/// A fresh directory under the system temporary folder, removed when released.
public final class TemporaryDirectory: @unchecked Sendable {  // @unchecked: immutable after init.
    /// The directory's path.
    public let path: String

    /// Creates the directory.
    public init(_ label: String = "tidemark") throws {
        path = NSTemporaryDirectory() + "\(label)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
