import Foundation

/// Errors of the command line itself (not of the store), each with what the user can do.
enum CLIError: Error, CustomStringConvertible {
    /// Neither `--store` nor `SYNC_STORE` was given.
    case noStore
    /// A file argument could not be read.
    case unreadableFile(String)
    /// An option's value is not valid.
    case invalidValue(option: String, value: String, reason: String)
    /// `import` could not apply a file given (`first`, the first refused in the order given), nor
    /// the files `others`.
    case notApplied(first: any Error, others: [String])

    var description: String {
        switch self {
        case .noStore: return "no store given"
        case .unreadableFile(let path): return "cannot read \(path)"
        case .invalidValue(let option, let value, let reason): return "invalid \(option) '\(value)': \(reason)"
        case .notApplied(let first, let others) where others.isEmpty: return CLIWording.message(for: first)
        case .notApplied(let first, let others):
            return
                "\(CLIWording.message(for: first)) (and \(others.count) more not applied: \(others.joined(separator: ", ")))"
        }
    }

    var hint: String? {
        switch self {
        case .noStore: return "pass --store PATH or set SYNC_STORE"
        case .notApplied(let first, _): return CLIWording.hint(for: first)
        default: return nil
        }
    }
}
