import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Looks at a store file, its folder and its file system to say why SQLite could not write it.
enum StoreFileDiagnosis {
    static let unknown = "SQLite opened it read-only"

    /// Why `path` (or the `-wal` and `-shm` files SQLite keeps next to it) cannot be written, and the fix.
    static func whyNotWritable(_ path: String) -> (reason: String, fix: String) {
        let folder = FilePaths.folder(of: path)
        let readOnlyFileSystem = (
            "it is on a read-only file system", "remount that file system read-write, or copy the store elsewhere"
        )
        // SQLite creates the -wal and -shm files with the store's own mode, so a read-only store
        // leaves read-only companions behind: all of them need fixing.
        let files: [String] = [path, path + "-wal", path + "-shm"].filter { access($0, F_OK) == 0 }
        let locked = files.filter { access($0, W_OK) != 0 }
        if let first = locked.first {
            _ = access(first, W_OK)
            if errno == EROFS { return readOnlyFileSystem }
            let names = locked.map { "\($0) (mode \(modeText($0)))" }.joined(separator: ", ")
            if let owner = otherOwner(first) {
                // Write permission for its owner would not help: this user is not that owner.
                return (
                    "\(locked.count == 1 ? "the file belongs" : "these files belong") to \(owner), not to this user: \(names)",
                    "run the command as \(owner), or give \(locked.count == 1 ? "it" : "them") to this user: "
                        + "chown \(currentUser()) \(locked.joined(separator: " "))"
                )
            }
            return (
                "\(locked.count == 1 ? "the file is" : "these files are") read-only: \(names)",
                "make them writable: chmod u+w \(locked.joined(separator: " "))"
            )
        }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) {
            return ("its folder \(folder) does not exist", "create the folder first (mkdir -p \(folder))")
        }
        if !isDirectory.boolValue {
            return ("\(folder) is a file, not a folder", "give a path inside a folder")
        }
        if access(folder, W_OK | X_OK) != 0 {
            if errno == EROFS { return readOnlyFileSystem }
            if let owner = otherOwner(folder) {
                return (
                    "its folder \(folder) belongs to \(owner), not to this user (mode \(modeText(folder))), and SQLite must create \((path as NSString).lastPathComponent)-wal and -shm there",
                    "run the command as \(owner), or give the folder to this user: chown \(currentUser()) \(folder)"
                )
            }
            return (
                "its folder \(folder) is not writable (mode \(modeText(folder))), and SQLite must create \((path as NSString).lastPathComponent)-wal and -shm there",
                "make the folder writable: chmod u+w \(folder)"
            )
        }
        return (unknown, "check the permissions of \(path) and its folder")
    }

    /// The user that owns `path`, by name where the system knows it, when it is not this
    /// process's user; nil when it is, or when `path` cannot be looked at.
    private static func otherOwner(_ path: String) -> String? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_uid != geteuid() else { return nil }
        return userName(status.st_uid)
    }

    /// This process's user, by name where the system knows it.
    private static func currentUser() -> String { userName(geteuid()) }

    private static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return String(cString: name)
    }

    /// Why writing next to `path` ran out of room, when the process's file size limit or the
    /// disk's free space explains it; nil when neither does.
    static func whyFull(_ path: String) -> FileFault? {
        // A write past the limit fails with EFBIG; the file is left just short of it.
        if let limit = fileSizeLimit() {
            let largest = ["", "-wal", "-shm", "-journal"].compactMap { fileSize(path + $0) }.max() ?? 0
            if largest + (1 << 20) >= limit { return .fileTooLarge(limit: limit) }
        }
        let folder = FilePaths.folder(of: path)
        if let free = freeBytes(folder), free < 1 << 20 { return .noSpace }
        return nil
    }

    /// The `RLIMIT_FSIZE` soft limit in bytes, or nil when there is none.
    static func fileSizeLimit() -> UInt64? {
        var limit = rlimit()
        #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
            let infinity = rlim_t.max  // RLIM_INFINITY is ~0 and does not import
        #elseif canImport(Musl)
            let resource = RLIMIT_FSIZE
            let infinity = rlim_t.max
        #else
            let resource = RLIMIT_FSIZE
            let infinity = rlim_t(Int64.max)  // Darwin's RLIM_INFINITY, (1 << 63) - 1
        #endif
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur != infinity else { return nil }
        return UInt64(limit.rlim_cur)
    }

    /// Bytes available to unprivileged users on the file system holding `path`.
    static func freeBytes(_ path: String) -> UInt64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    /// The size of the file at `path`, or nil when there is none.
    static func fileSize(_ path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt64(info.st_size)
    }

    /// The permission bits of `path` in octal, or "unknown".
    static func modeText(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return "unknown" }
        return String(format: "%04o", UInt16(info.st_mode & 0o7777))
    }
}
