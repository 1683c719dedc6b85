import Foundation

/// What a finished child process left behind.
public struct CommandResult: Sendable, CustomStringConvertible {
    /// The exit status (or the terminating signal's number, if it was killed).
    public var exitCode: Int32
    /// Everything written to standard output, as UTF-8.
    public var stdout: String
    /// Everything written to standard error, as UTF-8.
    public var stderr: String

    /// Creates a result.
    public init(exitCode: Int32, stdout: String, stderr: String) {
        self.exitCode = exitCode
        self.stdout = stdout
        self.stderr = stderr
    }

    /// Standard output split into lines, without the final empty one.
    public var stdoutLines: [String] { Self.lines(stdout) }
    /// Standard error split into lines, without the final empty one.
    public var stderrLines: [String] { Self.lines(stderr) }
    /// The standard-error lines that start with `error: `.
    public var errorLines: [String] { stderrLines.filter { $0.hasPrefix("error: ") } }
    /// The standard-error lines that start with `hint: `.
    public var hintLines: [String] { stderrLines.filter { $0.hasPrefix("hint: ") } }

    /// For failure messages: the exit code and both streams.
    public var description: String { "exit \(exitCode)\n--- stdout\n\(stdout)--- stderr\n\(stderr)---" }

    static func lines(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }
}

/// Runs a program to completion and collects its output.
///
/// The wait happens on a Dispatch thread, not on the Swift concurrency pool, so many tests can run
/// processes at once without starving each other's tasks (the pool has one thread per core).
public enum CommandRunner {
    /// Runs `executable` with `arguments`; `environment` replaces the inherited one when given, and
    /// `stdin` is written to the child's standard input (which is empty otherwise).
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil
    ) async throws -> CommandResult {
        let child = try ChildProcess(
            executable, arguments, environment: environment, stdin: stdin == nil ? .null : .pipe)
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let group = DispatchGroup()
                nonisolated(unsafe) var errorData = Data()
                DispatchQueue.global().async(group: group) { errorData = child.readErrors() }
                if let stdin {
                    DispatchQueue.global().async(group: group) { child.writeInputAndClose(Data(stdin.utf8)) }
                }
                let outputData = child.readOutput()
                group.wait()
                let ending = child.waitForExit()
                continuation.resume(
                    returning: CommandResult(
                        exitCode: ending.code, stdout: String(decoding: outputData, as: UTF8.self),
                        stderr: String(decoding: errorData, as: UTF8.self)))
            }
        }
    }
}

/// A child process left running, whose standard output arrives line by line (for `sync watch`).
public final class RunningCommand: Sendable {
    /// Standard output, one element per line, ending when the child closes it.
    public let lines: AsyncStream<String>
    private let child: ChildProcess

    /// Starts `executable`; see `CommandRunner.run` for the arguments.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        let child = try ChildProcess(executable, arguments, environment: environment)
        self.child = child
        let (lines, continuation) = AsyncStream<String>.makeStream()
        self.lines = lines
        DispatchQueue.global().async {
            var pending = Data()
            while true {
                let chunk = child.nextOutput()
                if chunk.isEmpty { break }
                pending += chunk
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    continuation.yield(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending = Data(pending[(newline + 1)...])
                }
            }
            if !pending.isEmpty { continuation.yield(String(decoding: pending, as: UTF8.self)) }
            continuation.finish()
        }
    }

    /// Sends SIGTERM, waits for the child to exit, and returns its exit code and standard error
    /// (standard output went to `lines`).
    public func stop() async -> CommandResult {
        let child = child
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                child.send(SIGTERM)
                let errorData = child.readErrors()
                let ending = child.waitForExit()
                continuation.resume(
                    returning: CommandResult(
                        exitCode: ending.code, stdout: "", stderr: String(decoding: errorData, as: UTF8.self)))
            }
        }
    }
}
