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

    /// Throws `readFailed` when the exchange folder or one of its folders cannot be listed:
    /// skipping it would silently miss bundles.
    func folders() throws -> [String] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: root) } catch {
            throw ExchangeError.readFailed(path: root, FileFault(error))
        }
        return try names.sorted().filter { name in
            let folder = path(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue
            else { return false }
            if access(folder, R_OK | X_OK) != 0 {
                throw ExchangeError.readFailed(path: folder, FileFault(errno: errno))
            }
            return true
        }
    }

    func files(in folder: String) throws -> [ExchangeEntry] {
        let directory = path(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().map { name in
            // Size and time tell a temporary's age, and whether a file changed since it was checked.
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + name),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { return ExchangeEntry(name: name) }
            return ExchangeEntry(
                name: name, size: (attributes[.size] as? NSNumber)?.int64Value,
                modified: attributes[.modificationDate] as? Date)
        }
    }

    func localCopy(of name: String, in folder: String, prefix: Int?) throws -> ExchangeLocalCopy {
        ExchangeLocalCopy(path: address(of: name, in: folder), complete: true)
    }

    func createFolder(_ folder: String) throws {
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
        let final = address(of: name, in: folder)
        guard rename(temporary, final) == 0 else {
            let code = errno
            unlink(temporary)
            throw ExchangeError.cannotWrite(path: final, reason: String(cString: strerror(code)))
        }
    }

    func remove(_ name: String, in folder: String) throws {
        let final = address(of: name, in: folder)
        if unlink(final) != 0, errno != ENOENT {
            throw ExchangeError.cannotWrite(path: final, reason: String(cString: strerror(errno)))
        }
    }

    var bytesDownloaded: Int64 { 0 }

    func close() {}
}
