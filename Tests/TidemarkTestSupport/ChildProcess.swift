import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn`, the one way the tests start programs.
///
/// Not Foundation's `Process`: on Linux it lists `/proc/self/fd` before every start and copies each
/// entry's whole 256-byte name field, reading past the end of the listing buffer once the test
/// process holds about 1,360 descriptors, which the parallel suite reaches; the copy then crashes
/// the whole run. A child here gets its three standard descriptors and nothing else: every other
/// one is closed as it starts (`closefrom`), so no child keeps another test's pipe open.
// @unchecked: `ending` and `ends` are guarded by `lock`; the rest is immutable.
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A pipe whose other end this object holds (`readOutput()`, `nextOutput()`, `readErrors()`,
        /// `writeInputAndClose(_:)`).
        case pipe
        /// A file, created or truncated.
        case file(String)
        /// Standard error only: wherever standard output goes.
        case standardOutput
    }

    /// How a child ended.
    public enum Ending: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)

        /// The exit status, or the number of the signal that ended it (as Foundation reports it).
        public var code: Int32 {
            switch self {
            case .exited(let status), .signaled(let status): return status
            }
        }
    }

    public let pid: pid_t
    /// This process's ends of the child's piped standard streams, by the child's descriptor
    /// number (0, 1, 2), while open: each is closed once read to its end (or written), not when
    /// this object goes, which may be long after in a busy test run.
    private var ends: [Int32: Int32] = [:]
    private let lock = NSLock()
    private var ending: Ending?

    /// Starts `executable` with `arguments`. `environment` replaces this process's when given;
    /// `directory` is the child's working directory (through `/bin/sh`, as glibc's `posix_spawn`
    /// has no portable way to set it).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdin: Stream = .null, stdout: Stream = .pipe, stderr: Stream = .pipe
    ) throws {
        var arguments = arguments
        var executable = executable
        if let directory {
            arguments = ["-c", "cd -- \"$0\" && exec \"$@\"", directory, executable] + arguments
            executable = "/bin/sh"
        }
        var actions = SpawnActions()
        defer { actions.destroy() }
        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        func connect(_ stream: Stream, to target: Int32, reading: Bool) throws -> Int32? {
            switch stream {
            case .null:
                actions.open(target, "/dev/null", reading ? O_RDONLY : O_WRONLY)
                return nil
            case .file(let path):
                actions.open(target, path, reading ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC)
                return nil
            case .standardOutput:
                actions.duplicate(STDOUT_FILENO, to: target)
                return nil
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw Self.failure("pipe", executable) }
                // Other spawners (exit tests) may not close what they do not pass on.
                for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
                let (mine, theirs) = reading ? (ends[1], ends[0]) : (ends[0], ends[1])
                parentEnds.append(mine)
                childEnds.append(theirs)
                actions.duplicate(theirs, to: target)
                return mine
            }
        }
        do {
            ends[STDIN_FILENO] = try connect(stdin, to: STDIN_FILENO, reading: true)
            ends[STDOUT_FILENO] = try connect(stdout, to: STDOUT_FILENO, reading: false)
            ends[STDERR_FILENO] = try connect(stderr, to: STDERR_FILENO, reading: false)
        } catch {
            for descriptor in parentEnds { close(descriptor) }
            throw error
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for pointer in variables ?? [] { free(pointer) } }
        var pid: pid_t = 0
        let status: Int32
        if let variables {
            status = actions.spawn(&pid, executable, argv, variables)
        } else {
            status = actions.spawn(&pid, executable, argv, environ)
        }
        guard status == 0 else {
            for descriptor in parentEnds { close(descriptor) }
            throw Self.failure("posix_spawn", executable, code: status)
        }
        self.pid = pid
    }

    deinit {
        for descriptor in ends.values { close(descriptor) }
        // Never leave a zombie: reap it if it already ended (a running child is the owner's to stop).
        _ = hasExited
    }

    /// Reads the child's standard output to its end (blocking); empty unless it is piped.
    public func readOutput() -> Data { readToEnd(STDOUT_FILENO) }

    /// Reads the child's standard error to its end (blocking); empty unless it is piped.
    public func readErrors() -> Data { readToEnd(STDERR_FILENO) }

    /// The next chunk of standard output as it arrives (blocking); empty at its end.
    public func nextOutput() -> Data {
        guard let descriptor = end(STDOUT_FILENO) else { return Data() }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 { return Data(buffer[0..<count]) }
            if count < 0 && errno == EINTR { continue }
            closeEnd(STDOUT_FILENO)
            return Data()
        }
    }

    /// Writes `data` to the child's standard input and closes it (a child that exits first fails
    /// the write quietly). Only when standard input is piped; call it once.
    public func writeInputAndClose(_ data: Data) {
        guard let descriptor = end(STDIN_FILENO) else { return }
        Self.ignoreBrokenPipes
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { break }
                offset += written
            }
        }
        closeEnd(STDIN_FILENO)
    }

    /// Waits until the child has ended (blocking) and says how.
    @discardableResult
    public func waitForExit() -> Ending {
        // Wait for the end without reaping and without the lock, so that `send(_:)` from another
        // thread is not held up (the unreaped child keeps its pid), then reap it.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        while true {
            if let ending = reap(blocking: true) { return ending }
        }
    }

    /// Whether the child has ended (reaping it if it just did).
    public var hasExited: Bool { reap(blocking: false) != nil }

    /// Sends `signal` unless the child has been reaped (then its pid may belong to another process).
    public func send(_ signal: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if ending == nil { kill(pid, signal) }
    }

    /// Waits up to `limit` for the child to end; true when it did.
    public func waitForExit(within limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        while !hasExited {
            guard ContinuousClock.now < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    private func reap(blocking: Bool) -> Ending? {
        lock.lock()
        defer { lock.unlock() }
        if let ending { return ending }
        var status: Int32 = 0
        let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
        guard result == pid else {
            if result < 0 && errno != EINTR { ending = .exited(-1) }
            return ending
        }
        // The wait-status layout: the low 7 bits the terminating signal (0 for an exit), then the code.
        let signal = status & 0x7f
        ending = signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
        return ending
    }

    private func end(_ stream: Int32) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        return ends[stream]
    }

    private func closeEnd(_ stream: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if let descriptor = ends.removeValue(forKey: stream) { close(descriptor) }
    }

    private func readToEnd(_ stream: Int32) -> Data {
        guard let descriptor = end(stream) else { return Data() }
        defer { closeEnd(stream) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                data.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    private static func failure(_ call: String, _ executable: String, code: Int32 = errno) -> CocoaError {
        CocoaError(
            .fileReadUnknown,
            userInfo: [NSLocalizedDescriptionKey: "\(call) for \(executable): \(String(cString: strerror(code)))"])
    }

    /// A child that exits before reading all of its input must fail the write, not kill the tests.
    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()
}

/// The file actions of one start; `spawn` adds, last, the closing of every descriptor above 2.
private struct SpawnActions {
    #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
    #else
        var actions: posix_spawn_file_actions_t?
    #endif

    init() { posix_spawn_file_actions_init(&actions) }

    mutating func destroy() { posix_spawn_file_actions_destroy(&actions) }

    mutating func open(_ target: Int32, _ path: String, _ flags: Int32) {
        posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o644)
    }

    mutating func duplicate(_ descriptor: Int32, to target: Int32) {
        posix_spawn_file_actions_adddup2(&actions, descriptor, target)
    }

    mutating func spawn(
        _ pid: inout pid_t, _ executable: String, _ argv: [UnsafeMutablePointer<CChar>?],
        _ environment: UnsafePointer<UnsafeMutablePointer<CChar>?>
    ) -> Int32 {
        #if canImport(Glibc)
            if let closeFrom = Self.closeFrom {
                _ = closeFrom(&actions, 3)
            } else {
                for descriptor in Self.openDescriptors() where descriptor > 2 {
                    posix_spawn_file_actions_addclose(&actions, descriptor)
                }
            }
            return posix_spawn(&pid, executable, &actions, nil, argv, environment)
        #else
            var attributes: posix_spawnattr_t?
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_CLOEXEC_DEFAULT))
            return posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        #endif
    }

    #if canImport(Glibc)
        /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
        /// module does not declare; nil on an older glibc.
        private static let closeFrom:
            (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
                guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else {
                    return nil
                }
                return unsafeBitCast(
                    symbol,
                    to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
            }()

        /// This process's open descriptors, from `/proc/self/fd` (each name read up to its NUL).
        private static func openDescriptors() -> [Int32] {
            guard let directory = opendir("/proc/self/fd") else { return [] }
            defer { closedir(directory) }
            let own = dirfd(directory)
            var descriptors: [Int32] = []
            while let entry = readdir(directory) {
                let name = withUnsafePointer(to: &entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if let descriptor = Int32(name), descriptor != own { descriptors.append(descriptor) }
            }
            return descriptors
        }
    #endif
}
