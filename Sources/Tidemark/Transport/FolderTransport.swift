import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exchange folder on a local file system: a network share, a USB stick, or a folder a cloud
/// drive keeps in step. Temporaries are written beside their final name, so publishing is one
/// `link(2)` (which fails rather than replace) and replacing one `rename(2)` (Protocol/exchange.md §3).
final class FolderTransport: ExchangeTransport {
    /// The exchange folder.
    let root: String

    init(_ root: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ExchangeError.cannotRead(
                path: root,
                reason: FileManager.default.fileExists(atPath: root) ? "it is a file, not a folder" : "no such folder")
        }
        // Every use of the folder goes through it: without search permission nothing inside can be reached.
        if access(root, X_OK) != 0 { throw ExchangeError.readFailed(path: root, FileFault(errno: errno)) }
        self.root = root
    }

    var location: String { root }

    private func path(_ folder: String) -> String { folder.isEmpty ? root : root + "/" + folder }

    func address(of name: String, in folder: String) -> String { path(folder) + "/" + name }

    /// Whether `path` is a symbolic link (not followed).
    private static func isLink(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK
    }

    /// Throws when `folder`, a replica's folder, is a symbolic link: files are listed, written and
    /// removed only in a folder of the exchange itself, never through a link to another place (the
    /// folder that holds the store, say), which anyone who can write the exchange could make.
    private func checkNotLink(_ folder: String, writing: Bool) throws {
        let directory = path(folder)
        guard !folder.isEmpty, Self.isLink(directory) else { return }
        let reason = "it is a symbolic link, not a replica's folder; remove the link (a push makes the folder again)"
        throw writing
            ? ExchangeError.cannotWrite(path: directory, reason: reason)
            : ExchangeError.cannotRead(path: directory, reason: reason)
    }

    /// Throws `readFailed` when the exchange folder or one of its folders cannot be listed:
    /// skipping it would silently miss bundles. A symbolic link is no replica's folder: no replica
    /// makes one, and its files are elsewhere.
    func folders() throws -> [String] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: root) } catch {
            throw ExchangeError.readFailed(path: root, FileFault(error))
        }
        return try names.sorted().filter { name in
            let folder = path(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue,
                !Self.isLink(folder)
            else { return false }
            if access(folder, R_OK | X_OK) != 0 {
                throw ExchangeError.readFailed(path: folder, FileFault(errno: errno))
            }
            return true
        }
    }

    func files(in folder: String) throws -> [ExchangeEntry] {
        try checkNotLink(folder, writing: false)
        let directory = path(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().map { name in
            // Size and times tell a temporary's age, and whether a file changed since it was
            // checked: the status-change time too, since a copier may write the bytes into a file
            // of the final size and set the modification time back to what it was.
            var status = stat()
            guard lstat(directory + "/" + name, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
                return ExchangeEntry(name: name)
            }
            #if canImport(Darwin)
                let (modified, changed) = (status.st_mtimespec, status.st_ctimespec)
            #else
                let (modified, changed) = (status.st_mtim, status.st_ctim)
            #endif
            let date = { (time: timespec) in
                Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000)
            }
            return ExchangeEntry(
                name: name, size: Int64(status.st_size), modified: date(modified), changed: date(changed))
        }
    }

    func localCopy(of name: String, in folder: String, prefix: Int?) throws -> ExchangeLocalCopy {
        ExchangeLocalCopy(path: address(of: name, in: folder), complete: true)
    }

    func createFolder(_ folder: String) throws {
        try checkNotLink(folder, writing: true)
        let directory = path(folder)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw ExchangeError.cannotWrite(path: directory, reason: FileProblem.describe(path: directory))
        }
    }

    func temporaryFile(for folder: String) -> String {
        path(folder) + "/" + ExchangeFolder.temporaryPrefix + UUID().uuidString
    }

    func publish(_ temporary: String, in folder: String, as name: (Int) -> String) throws -> String {
        defer { unlink(temporary) }
        try checkNotLink(folder, writing: true)
        var attempt = 0
        while true {
            let final = address(of: name(attempt), in: folder)
            if link(temporary, final) == 0 { return name(attempt) }
            let code = errno
            // Taken (by another process of this replica, or a copy a sync service brought): the next.
            guard code == EEXIST || FileManager.default.fileExists(atPath: final) else {
                throw ExchangeError.cannotWrite(path: path(folder), reason: String(cString: strerror(code)))
            }
            attempt += 1
        }
    }

    func replace(_ name: String, in folder: String, with temporary: String) throws {
        do { try checkNotLink(folder, writing: true) } catch {
            unlink(temporary)
            throw error
        }
        let final = address(of: name, in: folder)
        guard rename(temporary, final) == 0 else {
            let code = errno
            unlink(temporary)
            throw ExchangeError.cannotWrite(path: final, reason: String(cString: strerror(code)))
        }
    }

    func remove(_ name: String, in folder: String) throws {
        try checkNotLink(folder, writing: true)
        let final = address(of: name, in: folder)
        if unlink(final) != 0, errno != ENOENT {
            throw ExchangeError.cannotWrite(path: final, reason: String(cString: strerror(errno)))
        }
    }

    var bytesDownloaded: Int64 { 0 }

    func close() {}
}
