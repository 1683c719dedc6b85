import Foundation
import GRDB

/// What a reader needs to compare runs: when, on what kind of machine (no host name), which build,
/// and the workload sizes.
struct RunInfo {
    var date: Date
    var system: String
    var machine: String
    var cores: Int
    var configuration: String
    var sqliteVersion: String
    var repetitions: Int
    /// The workloads run and their sizes.
    var sizes: String

    static func current(options: BenchOptions) -> RunInfo {
        var names = utsname()
        uname(&names)
        #if DEBUG
            let configuration = "debug"
        #else
            let configuration = "release"
        #endif
        let sqlite =
            (try? DatabaseQueue().read { db in try String.fetchOne(db, sql: "SELECT sqlite_version()") }) ?? nil
        return RunInfo(
            date: Date(), system: "\(field(&names.sysname)) \(field(&names.release))", machine: field(&names.machine),
            cores: ProcessInfo.processInfo.activeProcessorCount, configuration: configuration,
            sqliteVersion: sqlite ?? "?", repetitions: options.repetitions,
            sizes: options.workloads.map { workload in
                switch workload {
                case .capture: "capture N=\(options.rows) B=\(options.batch)"
                case .changeset: "changeset \(options.changes) changes"
                case .memory: "memory " + options.memoryChanges.map(String.init).joined(separator: "/") + " changes"
                case .folder: "folder \(options.replicas)×\(options.operations) ops seed \(options.seed)"
                case .history: "history \(options.transactions) tx"
                case .schema: "schema \(options.rows) rows"
                case .appwriter: "appwriter \(options.operations) tx"
                case .encryption: "encryption \(options.changes) changes"
                case .webdav: "webdav \(options.changes) changes"
                case .fanout:
                    "fanout " + options.fanout.map(String.init).joined(separator: "/")
                        + " replicas × \(options.fanoutRows) rows"
                case .join: "join \(options.rows) rows"
                }
            }.joined(separator: ", "))
    }

    var header: String {
        "tidemark-bench \(date.formatted(.iso8601)) | \(system) \(machine), \(cores) cores | \(configuration) build"
            + " | SQLite \(sqliteVersion) | R=\(repetitions) (+1 warm-up) | \(sizes)"
    }

    /// A NUL-terminated `utsname` field as a string.
    private static func field<T>(_ value: inout T) -> String {
        withUnsafeBytes(of: &value) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
