import ArgumentParser
import Foundation

/// `tidemark-crash`: SIGKILLs `sync` commands at random moments and checks that nothing is ever
/// half applied, lost, duplicated or corrupted, and that replicas still converge.
@main
struct CrashHarnessCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidemark-crash",
        abstract: "Kill sync commands at random moments and check that stores and the exchange folder stay sound.",
        discussion: """
            Each trial starts one of exec, import, push, pull or prune on one replica, SIGKILLs it after \
            a random delay, checks the store (integrity_check, every write transaction all or nothing, \
            history sequences unique and gap-free, nothing acknowledged lost) and the exchange folder \
            (every file under a final name verifies), reruns the command, checks it completed, and has \
            another replica pull. At the end all replicas push and pull until they hold the same rows. \
            Exits 1 if any check failed.
            """)

    @Option(help: "The random seed (default: a fresh one, printed). The same seed runs the same commands.")
    var seed: UInt64?

    @Option(help: "How many trials to run.")
    var trials = 100

    @Option(help: "How many replicas share the exchange folder.")
    var replicas = 3

    @Option(help: ArgumentHelp("The sync binary (default: the one beside this executable).", valueName: "path"))
    var sync: String?

    @Option(
        help: ArgumentHelp(
            "Draw kill delays from 0 to this many milliseconds (default: 1.25 x each command's usual duration).",
            valueName: "ms"))
    var maxDelay: Double?

    @Option(
        help: ArgumentHelp(
            "Work in this folder and keep it (default: a temporary folder, kept only on failure).", valueName: "dir"))
    var dir: String?

    @Flag(help: "Print only failures and the summary.")
    var quiet = false

    func validate() throws {
        guard trials >= 0 else { throw ValidationError("--trials must be 0 or more") }
        guard replicas >= 2 else { throw ValidationError("--replicas must be at least 2") }
        if let maxDelay, maxDelay <= 0 { throw ValidationError("--max-delay must be positive") }
    }

    func run() throws {
        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let syncPath = sync ?? Self.besideThisExecutable("sync")
        guard FileManager.default.isExecutableFile(atPath: syncPath) else {
            throw HarnessError.syncBinaryNotFound(syncPath)
        }
        let directory = dir ?? NSTemporaryDirectory() + "tidemark-crash-\(UUID().uuidString.prefix(8))"
        Self.say("tidemark-crash  seed \(seed)  trials \(trials)  replicas \(replicas)")
        Self.say("  sync    \(syncPath)")
        Self.say("  folder  \(directory)")

        let started = ContinuousClock.now
        let cluster = try Cluster(sync: syncPath, directory: directory, count: replicas)
        let quiet = quiet
        var runner = TrialRunner(
            cluster: cluster, seed: seed, maxDelay: maxDelay.map { .microseconds(Int64($0 * 1000)) },
            say: { line in if !quiet || line.contains("FAIL") { Self.say(line) } })
        runner.run(trials: trials)
        for line in runner.summary.lines(seed: seed, trials: trials, elapsed: ContinuousClock.now - started) {
            Self.say(line)
        }

        if runner.summary.failures.isEmpty {
            if dir == nil { try? FileManager.default.removeItem(atPath: directory) }
        } else {
            Self.say("kept \(directory) for inspection")
            throw ExitCode(1)
        }
    }

    /// Prints a line at once (the output may be a pipe read by a test).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The path of `name` in the folder holding this executable (SwiftPM puts every product of a
    /// build configuration in one folder).
    static func besideThisExecutable(_ name: String) -> String {
        #if os(Linux)
            let executable =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
        #else
            let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        #endif
        return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent(name).path
    }
}
