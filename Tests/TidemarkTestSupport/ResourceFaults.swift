import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs `sync` with a file size limit (`RLIMIT_FSIZE`), the portable way to make its writes fail
/// as on a full disk: past the limit `write()` fails with `EFBIG`. The shell ignores `SIGXFSZ`
/// before `exec`, and an ignored signal stays ignored in the new program, so the write returns
/// the error instead of killing the process.
public enum FileSizeLimit {
    /// Runs `sync ARGUMENTS…` under `ulimit -f BLOCKS` (512-byte blocks in `sh`).
    public static func run(blocks: Int, _ arguments: [String]) async throws -> CommandResult {
        try await CommandRunner.run(
            "/bin/sh", ["-c", "trap '' XFSZ; ulimit -f \(blocks) || exit 99; exec \"$SYNC\" \"$@\"", "sh"] + arguments,
            environment: SyncProcess.environment(["SYNC": SyncProcess.path]))
    }
}

/// Runs `sync` as a user that permission bits apply to. Root ignores them, so when the tests run
/// as root the command runs as `nobody` through `setpriv`, on files handed to `nobody` first;
/// otherwise it runs as the current user.
public enum Unprivileged {
    /// Whether this process is root.
    public static let isRoot = geteuid() == 0
    /// `setpriv`, when running as root needs it.
    static let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
    /// The user and group that commands run as when the tests run as root.
    static let nobody: (uid: uid_t, gid: gid_t) = (65534, 65534)

    /// Whether permission tests can run: not root, or root with `setpriv` to drop privileges.
    public static var available: Bool { !isRoot || setpriv != nil }

    /// Hands every file under each of `paths` (and the paths themselves) to the user commands run as.
    public static func own(_ paths: [String]) throws {
        guard isRoot else { return }
        for root in paths {
            var all = [root]
            if let enumerator = FileManager.default.enumerator(atPath: root) {
                all += enumerator.compactMap { $0 as? String }.map { root + "/" + $0 }
            }
            for path in all where lchown(path, nobody.uid, nobody.gid) != 0 {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
            }
        }
    }

    /// Runs `sync ARGUMENTS…` as the unprivileged user, after handing `owning` to it.
    public static func run(_ arguments: [String], owning: [String]) async throws -> CommandResult {
        try own(owning)
        guard isRoot, let setpriv else { return try await SyncProcess.run(arguments) }
        return try await CommandRunner.run(
            setpriv,
            ["--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups", SyncProcess.path] + arguments,
            environment: SyncProcess.environment())
    }
}

/// Another process holding a store's write lock: a `sqlite3` shell inside `BEGIN IMMEDIATE` with
/// an uncommitted insert, waiting until `release()` (or 15 minutes, past any test's wait for a
/// thread in a run that is busy with long tests) before it rolls back and exits.
public final class StoreLockHolder: @unchecked Sendable {  // @unchecked: immutable after init.
    private let child: ChildProcess
    private let releaseFile: String

    /// Starts the holder and returns once it holds the lock. `sql` is the write it leaves uncommitted.
    public init(store: String, sql: String) async throws {
        let marker = store + ".locked-\(UUID().uuidString.prefix(8))"
        releaseFile = store + ".release-\(UUID().uuidString.prefix(8))"
        child = try ChildProcess(
            SQLiteShell.path,
            [
                store, "BEGIN IMMEDIATE", sql,
                ".shell touch '\(marker)'; i=0; while [ ! -e '\(releaseFile)' ] && [ $i -lt 9000 ]; do sleep 0.1; i=$((i+1)); done",
                "ROLLBACK",
            ], stdout: .null, stderr: .null)
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: marker) {
            guard !child.hasExited, Date() < deadline else {
                throw CocoaError(
                    .fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "sqlite3 did not take the lock on \(store)"]
                )
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        try? FileManager.default.removeItem(atPath: marker)
    }

    /// Lets the holder roll back and waits for it to exit.
    public func release() async {
        _ = FileManager.default.createFile(atPath: releaseFile, contents: nil)
        while !child.hasExited { try? await Task.sleep(for: .milliseconds(20)) }
        try? FileManager.default.removeItem(atPath: releaseFile)
    }

    deinit {
        if !child.hasExited {
            _ = FileManager.default.createFile(atPath: releaseFile, contents: nil)
            child.send(SIGTERM)
            _ = child.waitForExit(within: .seconds(5))
        }
    }
}
