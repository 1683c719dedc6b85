import Foundation
import TidemarkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a bundle to a file through a buffer.
///
/// When a write, `fsync` or close fails (a full disk, a file size limit, a read-only file system),
/// the partial file is removed and `ExchangeError.writeFailed` says why: nothing half-written is
/// left behind for a reader to take.
final class FileSink: ByteSink {
    private let path: String
    private var descriptor: Int32
    private var buffer: [UInt8] = []
    private(set) var bytesWritten = 0

    /// Creates (or truncates) the file at `path`.
    init(path: String) throws {
        self.path = path
        descriptor = openForWriting(path)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR || code == EISDIR {
                throw ExchangeError.cannotWrite(path: path, reason: FileProblem.describe(path: path))
            }
            throw ExchangeError.writeFailed(path: path, FileFault(errno: code))
        }
    }

    deinit { if descriptor >= 0 { _ = closeDescriptor(descriptor) } }

    func write(_ bytes: [UInt8]) throws {
        buffer += bytes
        bytesWritten += bytes.count
        if buffer.count >= 1 << 20 { try flush() }
    }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        let code = buffer.withUnsafeBytes { writeFully(descriptor, $0) }
        if code != 0 { throw fail(code) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes, forces the data to disk and closes.
    func close() throws {
        try flush()
        if syncDescriptor(descriptor) != 0 { throw fail(errno) }
        let result = closeDescriptor(descriptor)
        descriptor = -1
        if result != 0 { throw fail(errno) }
    }

    /// Closes and removes the partial file; returns the error to throw.
    private func fail(_ code: Int32) -> ExchangeError {
        if descriptor >= 0 { _ = closeDescriptor(descriptor) }
        descriptor = -1
        unlink(path)
        return ExchangeError.writeFailed(path: path, FileFault(errno: code))
    }
}

// Free functions: inside `FileSink`, `write` and `close` name its own methods.
private func openForWriting(_ path: String) -> Int32 { open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
private func closeDescriptor(_ descriptor: Int32) -> Int32 { close(descriptor) }
private func syncDescriptor(_ descriptor: Int32) -> Int32 { fsync(descriptor) }

/// Writes all of `bytes`, retrying short writes and interruptions; returns 0 or the error number.
private func writeFully(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    guard var next = bytes.baseAddress else { return 0 }
    var remaining = bytes.count
    while remaining > 0 {
        let written = write(descriptor, next, remaining)
        if written < 0 {
            if errno == EINTR { continue }
            return errno
        }
        if written == 0 { return EIO }
        next += written
        remaining -= written
    }
    return 0
}

/// Reads a bundle from a file.
struct FileSource: ByteSource {
    private let handle: FileHandle
    private let path: String

    init(path: String) throws {
        // Opening a named pipe for reading waits for a writer, which may never come, and a device
        // may never end: only a regular file is read.
        if let kind = FileProblem.irregularKind(path: path) {
            throw ExchangeError.cannotRead(path: path, reason: kind)
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
                throw ExchangeError.readFailed(path: path, FileFault(error))
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
    /// What `path` is, when it is there (after symbolic links) but is not a regular file; nil for a
    /// regular file or nothing at all.
    static func irregularKind(path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & mode_t(S_IFMT) {
        case mode_t(S_IFREG): return nil
        case mode_t(S_IFDIR): return "is a folder"
        case mode_t(S_IFIFO): return "not a regular file (a named pipe)"
        case mode_t(S_IFSOCK): return "not a regular file (a socket)"
        case mode_t(S_IFCHR), mode_t(S_IFBLK): return "not a regular file (a device)"
        default: return "not a regular file"
        }
    }

    static func describe(path: String) -> String {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if !fm.fileExists(atPath: path, isDirectory: &isDirectory) {
            let parent = FilePaths.folder(of: path)
            if !fm.fileExists(atPath: parent, isDirectory: &isDirectory) {
                return "folder \(parent) does not exist"
            }
            if !isDirectory.boolValue { return "\(parent) is a file, not a folder" }
            if access(parent, W_OK | X_OK) != 0 {
                return errno == EROFS
                    ? "folder \(parent) is on a read-only file system"
                    : "folder \(parent) is not writable by this user (mode \(StoreFileDiagnosis.modeText(parent)))"
            }
            return "no such file"
        }
        if isDirectory.boolValue { return "is a folder" }
        if !fm.isReadableFile(atPath: path) { return "permission denied (mode \(StoreFileDiagnosis.modeText(path)))" }
        return "cannot be opened"
    }
}
