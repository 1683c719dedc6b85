import Foundation
import TidemarkCore

/// Writes a bundle to a file through a buffer.
final class FileSink: ByteSink {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private(set) var bytesWritten = 0

    /// Creates (or truncates) the file at `path`.
    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw ExchangeError.cannotWrite(path: path, reason: FileProblem.describe(path: path))
        }
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    }

    func write(_ bytes: [UInt8]) throws {
        buffer += bytes
        bytesWritten += bytes.count
        if buffer.count >= 1 << 20 { try flush() }
    }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes, forces the data to disk and closes.
    func close() throws {
        try flush()
        try handle.synchronize()
        try handle.close()
    }
}

/// Reads a bundle from a file.
struct FileSource: ByteSource {
    private let handle: FileHandle
    private let path: String

    init(path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ExchangeError.cannotRead(path: path, reason: FileProblem.describe(path: path))
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ExchangeError.cannotRead(path: path, reason: FileProblem.describe(path: path))
        }
        self.handle = handle
        self.path = path
    }

    mutating func read(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count {
            let data: Data?
            do { data = try handle.read(upToCount: count - out.count) } catch {
                throw ExchangeError.cannotRead(path: path, reason: "read failed (\(error.localizedDescription))")
            }
            guard let data, !data.isEmpty else { break }
            out += data
        }
        return out
    }

    func close() { try? handle.close() }
}

/// Says why a path cannot be used, for error messages.
enum FileProblem {
    static func describe(path: String) -> String {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if !fm.fileExists(atPath: path, isDirectory: &isDirectory) {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, !fm.fileExists(atPath: parent) { return "folder \(parent) does not exist" }
            if !parent.isEmpty, !fm.isWritableFile(atPath: parent) { return "folder \(parent) is not writable" }
            return "no such file"
        }
        if isDirectory.boolValue { return "is a folder" }
        if !fm.isReadableFile(atPath: path) { return "permission denied" }
        return "cannot be opened"
    }
}
