/// Why the harness itself could not go on (as opposed to a failed check, which is recorded and
/// reported at the end).
enum HarnessError: Error, CustomStringConvertible {
    /// The `sync` binary is not where it was looked for.
    case syncBinaryNotFound(String)
    /// A child process could not be started or waited for.
    case cannotStart(command: String, reason: String)
    /// A setup step failed, so there is nothing to test.
    case setupFailed(step: String, result: String)
    /// The working folder could not be prepared.
    case cannotPrepare(path: String, reason: String)

    var description: String {
        switch self {
        case .syncBinaryNotFound(let path): return "no sync binary at \(path) (build it, or pass --sync PATH)"
        case .cannotStart(let command, let reason): return "cannot run \(command): \(reason)"
        case .setupFailed(let step, let result): return "setup step '\(step)' failed:\n\(result)"
        case .cannotPrepare(let path, let reason): return "cannot prepare \(path): \(reason)"
        }
    }
}
