import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One child process started with `posix_spawn`, its output going to files, so that the harness
/// alone decides when it is reaped and can SIGKILL it at a chosen moment without racing a
/// background reaper (Foundation's `Process` reaps on its own thread).
struct ChildProcess {
    /// How a child ended.
    enum Ending: Equatable, CustomStringConvertible {
        /// It exited by itself with this status.
        case exited(Int32)
        /// It was ended by this signal.
        case signaled(Int32)

        var description: String {
            switch self {
            case .exited(let code): return "exit \(code)"
            case .signaled(let signal): return "signal \(signal)"
            }
        }
    }

    /// What a finished child left behind.
    struct Result: CustomStringConvertible {
        /// The command line, for messages.
        var commandLine: String
        /// How it ended.
        var ending: Ending
        /// Its standard output.
        var stdout: String
        /// Its standard error.
        var stderr: String
        /// How long it ran, from spawn to reaping.
        var duration: Duration

        /// Whether it exited 0 by itself.
        var succeeded: Bool { ending == .exited(0) }

        /// The non-empty lines of standard error.
        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }

        var description: String {
            "\(commandLine)\n  ended: \(ending)\n  stdout: \(stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n  stderr: \(stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
        }
    }

    /// What running a child with a kill deadline came to.
    struct KillOutcome {
        /// The child's result (ending `.signaled(SIGKILL)` when the kill landed).
        var result: Result
        /// Whether the SIGKILL reached a child that was still running.
        var killedMidCommand: Bool
    }

    let executable: String
    let arguments: [String]
    /// A folder for the output files.
    let scratch: String

    /// The command line for messages, long arguments (SQL) shortened.
    private var commandLine: String {
        ([executable] + arguments).map { $0.count > 60 ? $0.prefix(57) + "…" : $0 }.joined(separator: " ")
    }

    /// Runs the child to completion.
    func run() throws -> Result {
        let (pid, files, started) = try spawn()
        let status = try reap(pid, blocking: true)!
        return collect(ending: status, files: files, started: started)
    }

    /// Starts the child, lets it run for `delay`, then sends SIGKILL unless it already exited.
    func run(killingAfter delay: Duration) throws -> KillOutcome {
        let (pid, files, started) = try spawn()
        let deadline = started + delay
        let clock = ContinuousClock()
        // Sleep in short steps so a child that finishes early is noticed (and not killed).
        while clock.now < deadline {
            if let ending = try reap(pid, blocking: false) {
                return KillOutcome(
                    result: collect(ending: ending, files: files, started: started), killedMidCommand: false)
            }
            let remaining = deadline - clock.now
            let step = min(remaining, .milliseconds(2))
            if step > .zero { Self.sleep(step) }
        }
        if let ending = try reap(pid, blocking: false) {
            return KillOutcome(result: collect(ending: ending, files: files, started: started), killedMidCommand: false)
        }
        // The child has not been reaped, so its pid cannot have been reused: the kill reaches it
        // (or its zombie, if it exited just now).
        kill(pid, SIGKILL)
        let ending = try reap(pid, blocking: true)!
        return KillOutcome(
            result: collect(ending: ending, files: files, started: started),
            killedMidCommand: ending == .signaled(SIGKILL))
    }

    private struct OutputFiles {
        var stdout: String
        var stderr: String
    }

    private func spawn() throws -> (pid_t, OutputFiles, ContinuousClock.Instant) {
        let stem = scratch + "/child-\(UUID().uuidString.prefix(8))"
        let files = OutputFiles(stdout: stem + ".out", stderr: stem + ".err")
        #if canImport(Glibc)
            var actions = posix_spawn_file_actions_t()
        #else
            var actions: posix_spawn_file_actions_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, files.stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, files.stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let started = ContinuousClock.now
        let status = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard status == 0 else {
            throw HarnessError.cannotStart(command: commandLine, reason: String(cString: strerror(status)))
        }
        return (pid, files, started)
    }

    /// Waits for `pid`; returns nil when not blocking and it is still running.
    private func reap(_ pid: pid_t, blocking: Bool) throws -> Ending? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            if result == pid { break }
            if result == 0 { return nil }
            if errno == EINTR { continue }
            throw HarnessError.cannotStart(command: commandLine, reason: "waitpid: \(String(cString: strerror(errno)))")
        }
        // The wait-status layout: low 7 bits the terminating signal (0 for a normal exit), then the exit code.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }

    private func collect(ending: Ending, files: OutputFiles, started: ContinuousClock.Instant) -> Result {
        let duration = ContinuousClock.now - started
        let stdout = (try? String(contentsOfFile: files.stdout, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: files.stderr, encoding: .utf8)) ?? ""
        unlink(files.stdout)
        unlink(files.stderr)
        return Result(commandLine: commandLine, ending: ending, stdout: stdout, stderr: stderr, duration: duration)
    }

    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
