import Foundation

/// Errors of the command line itself (not of the store), each with what the user can do.
enum CLIError: Error, CustomStringConvertible {
    /// Neither `--store` nor `SYNC_STORE` was given.
    case noStore
    /// A file argument could not be read.
    case unreadableFile(String)
    /// An option's value is not valid.
    case invalidValue(option: String, value: String, reason: String)

    var description: String {
        switch self {
        case .noStore: return "no store given"
        case .unreadableFile(let path): return "cannot read \(path)"
        case .invalidValue(let option, let value, let reason): return "invalid \(option) '\(value)': \(reason)"
        }
    }

    var hint: String? {
        switch self {
        case .noStore: return "pass --store PATH or set SYNC_STORE"
        default: return nil
        }
    }
}
