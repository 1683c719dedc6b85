import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why the operating system refused to read or write a file, from its error number.
public enum FileFault: Sendable, Equatable, CustomStringConvertible {
    /// `ENOSPC`: the disk is full.
    case noSpace
    /// `EDQUOT`: this user's disk quota is used up.
    case quotaExceeded
    /// `EFBIG`: the file would exceed the process's file size limit (`limit`, in bytes, when one
    /// is set) or the file system's maximum file size.
    case fileTooLarge(limit: UInt64?)
    /// `EACCES` or `EPERM`: this user may not do it.
    case permissionDenied
    /// `EROFS`: the file system is mounted read-only.
    case readOnlyFileSystem
    /// `EIO`: the device reported an error.
    case ioError
    /// Any other error, with the system's message.
    case other(String)

    /// Classifies the error number `code`.
    public init(errno code: Int32) {
        switch code {
        case ENOSPC: self = .noSpace
        case EDQUOT: self = .quotaExceeded
        case EFBIG: self = .fileTooLarge(limit: StoreFileDiagnosis.fileSizeLimit())
        case EACCES, EPERM: self = .permissionDenied
        case EROFS: self = .readOnlyFileSystem
        case EIO: self = .ioError
        default: self = .other(String(cString: strerror(code)))
        }
    }

    /// Classifies a Foundation error by its underlying POSIX error number, if it has one.
    init(_ error: any Error) {
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain {
            self.init(errno: Int32(nsError.code))
        } else if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        {
            self.init(errno: Int32(underlying.code))
        } else if nsError.domain == NSCocoaErrorDomain,
            nsError.code == NSFileReadNoPermissionError || nsError.code == NSFileWriteNoPermissionError
        {
            self = .permissionDenied
        } else if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileWriteOutOfSpaceError {
            self = .noSpace
        } else if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileWriteVolumeReadOnlyError {
            self = .readOnlyFileSystem
        } else {
            self = .other(nsError.localizedDescription)
        }
    }

    public var description: String {
        switch self {
        case .noSpace: return "disk full (no space left on the device)"
        case .quotaExceeded: return "disk full (this user's disk quota is exceeded)"
        case .fileTooLarge(let limit?):
            return "file too large: the file size limit of this process (ulimit -f) is \(limit) bytes"
        case .fileTooLarge(nil): return "file too large for the file system"
        case .permissionDenied: return "permission denied"
        case .readOnlyFileSystem: return "the file system is read-only"
        case .ioError: return "I/O error (the device reported a failure)"
        case .other(let message): return message
        }
    }

    /// What the user can do, for a failure in or on `folder`.
    func hint(folder: String, writing: Bool) -> String {
        switch self {
        case .noSpace, .quotaExceeded: return "free space on the disk holding \(folder), then run the command again"
        case .fileTooLarge(.some): return "raise the file size limit (ulimit -f unlimited), then run the command again"
        case .fileTooLarge(nil):
            return "use a folder on a file system that allows larger files, then run the command again"
        case .permissionDenied:
            return writing
                ? "let this user write \(folder) (see ls -ld \(folder); chmod u+w), then run the command again"
                : "let this user read \(folder) (see ls -ld \(folder); chmod u+rx), then run the command again"
        case .readOnlyFileSystem:
            return "remount \(folder) read-write or use another folder, then run the command again"
        case .ioError: return "check the device holding \(folder) (system log), then run the command again"
        case .other: return "fix the cause, then run the command again"
        }
    }
}
