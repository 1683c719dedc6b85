import Foundation
import GRDB
import Tidemark
import TidemarkTestSupport

/// Workload 5's building block: a store with N changes is exported to a bundle and imported into a
/// fresh replica, each in a child process that reports its own time and peak resident memory.
enum BundleWorkload {
    /// One child run's result.
    struct ChildResult: Codable {
        var seconds: Double
        var peakBytes: Int
        var changes: Int
        var bytes: Int
    }

    /// What the parent reports.
    struct Result {
        var changes: Int
        var export: ChildResult
        var `import`: ChildResult
        var bytesPerChange: Double { Double(export.bytes) / Double(changes) }
    }

    /// Builds the source store (N inserts in 10k-row transactions), then measures export and import.
    static func run(changes: Int, in scratch: URL) throws -> Result {
        let source = scratch.appendingPathComponent("source.sqlite").path
        let target = scratch.appendingPathComponent("target.sqlite").path
        let bundle = scratch.appendingPathComponent("all.tmb").path
        Output.progress("bundle: building a store with \(changes) changes")
        let (store, _) = try Store.initialize(
            source, setup: Store.Setup(replicaName: "source", schema: ("bench", Fixtures.schema)))
        let (receiver, _) = try Store.initialize(
            target, setup: Store.Setup(replicaName: "target", schema: ("bench", Fixtures.schema)))
        try receiver.addPeer(name: "source", publicKeyBase64: Data(store.publicKey).base64EncodedString())
        var written = 0
        while written < changes {
            let count = min(10_000, changes - written)
            _ = try store.write { db in
                let statement = try db.cachedStatement(
                    sql: "INSERT INTO items(id, title, qty, price, payload) VALUES (?, ?, ?, ?, ?)")
                for i in written..<written + count {
                    let payload = Data((0..<32).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) })
                    try statement.execute(arguments: [
                        String(format: "k%08d", i), "Item \(i)", i, Double(i) * 0.25, payload,
                    ])
                }
            }
            written += count
        }
        Output.progress("bundle: exporting in a child process")
        let export = try child(["child-export", source, bundle])
        Output.progress("bundle: importing in a child process")
        let imported = try child(["child-import", target, bundle])
        guard imported.changes == changes, export.changes == changes else {
            throw BenchError.unexpectedState(
                metric: "bundle", side: .tracked, what: "changes exported/imported", expected: Int64(changes),
                found: Int64(imported.changes))
        }
        return Result(changes: changes, export: export, import: imported)
    }

    /// Runs this executable with `arguments` and decodes the JSON result it prints.
    static func child(_ arguments: [String]) throws -> ChildResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        if !FileManager.default.fileExists(atPath: process.executableURL!.path) {
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        }
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError.unexpectedState(
                metric: "bundle", side: .tracked, what: "child exit status", expected: 0,
                found: Int64(process.terminationStatus))
        }
        return try JSONDecoder().decode(ChildResult.self, from: data)
    }

    /// This process's peak resident set size in bytes.
    static func peakResidentBytes() -> Int { PeakMemory.residentBytes() }

    /// Prints a child's result as JSON on standard output.
    static func report(_ result: ChildResult) throws {
        Output.write(String(decoding: try JSONEncoder().encode(result), as: UTF8.self) + "\n")
    }
}
