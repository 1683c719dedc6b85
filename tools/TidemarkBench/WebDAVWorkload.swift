import Foundation
import Tidemark
import TidemarkTestSupport

/// Issue 14's exchange through a WebDAV server: a push of --changes changes, then a fresh
/// replica's pull of it, through Apache mod_dav on the loopback (HTTP, so the figure is the
/// transport's, not TLS's), against the same through a local folder; alternating every repetition
/// in this process. Also bytes downloaded by the pull per byte of the bundle it needed, and by a
/// second pull with nothing new.
struct WebDAVWorkload {
    var changes: Int
    var repetitions: Int

    /// Long by design: one measurement loop, the server and the folder alternating, read top to bottom.
    func run(in scratch: URL) throws -> (rows: [Report.Row], figures: [Report.Figure]) {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        Output.progress("webdav: starting Apache mod_dav on the loopback")
        let server = try WebDAVServer(.apache)
        let settings = ExchangeSettings(netrcPath: server.netrc)
        Output.progress("webdav: building a store with \(changes) changes")
        let (store, key, _) = try Fixtures.sourceAndEmptyTarget(changes: changes, in: scratch)

        var samples: [Bool: (push: [Double], pull: [Double])] = [true: ([], []), false: ([], [])]
        var downloaded: [Double] = []
        var idle: [Double] = []
        for round in 0...repetitions {
            for remote in round % 2 == 0 ? [false, true] : [true, false] {
                // A new exchange folder each time: the push writes everything again.
                let folder = "round-\(round)"
                let location: String
                if remote {
                    try FileManager.default.createDirectory(
                        atPath: server.root + "/" + folder, withIntermediateDirectories: true,
                        attributes: [.posixPermissions: 0o777])
                    location = server.url + folder + "/"
                } else {
                    location = path(folder)
                    try FileManager.default.createDirectory(atPath: location, withIntermediateDirectories: true)
                }
                let pushed = try timed { try store.push(to: location, key: key, settings: settings) }
                guard let bundle = pushed.value.export, bundle.transactionCount > 0 else {
                    throw BenchError.unexpectedState(
                        metric: "webdav.push", side: .tracked, what: "transactions pushed", expected: 1, found: 0)
                }
                let target = path("target-\(round)-\(remote).sqlite")
                let (opened, targetKey) = try Fixtures.copyOfEmptyTarget(in: scratch, to: target)
                let pulled = try timed {
                    try opened.pull(from: location, key: targetKey, prune: false, settings: settings)
                }
                let applied = pulled.value.imported.map(\.appliedChanges).reduce(0, +)
                guard applied >= changes, pulled.value.warnings.isEmpty else {
                    throw BenchError.unexpectedState(
                        metric: "webdav.pull", side: .tracked,
                        what: remote ? "changes pulled through WebDAV" : "changes pulled from a folder",
                        expected: Int64(changes), found: Int64(applied))
                }
                if remote && round > 0 {
                    downloaded.append(Double(pulled.value.bytesDownloaded) / Double(bundle.bytes))
                    // Nothing new: what the first pull read is not downloaded again.
                    let again = try opened.pull(from: location, key: targetKey, prune: false, settings: settings)
                    idle.append(Double(again.bytesDownloaded))
                }
                Fixtures.removeStore(target)
                if round > 0 {
                    samples[remote]!.push.append(pushed.seconds)
                    samples[remote]!.pull.append(pulled.seconds)
                }
            }
        }
        let perUseful = downloaded.sorted()[downloaded.count / 2]
        Output.progress("webdav: pull downloaded \(perUseful) bytes per byte of the bundle it needed")
        return (
            [
                Report.Row(
                    metric: "webdav.push", ours: Measurement(samples: samples[true]!.push),
                    baseline: Measurement(samples: samples[false]!.push), baselineName: "push to a folder",
                    unit: "s", goal: nil),
                Report.Row(
                    metric: "webdav.pull", ours: Measurement(samples: samples[true]!.pull),
                    baseline: Measurement(samples: samples[false]!.pull), baselineName: "pull from a folder",
                    unit: "s", goal: nil),
            ],
            [
                Report.Figure(
                    metric: "webdav.pull.downloaded_per_useful_byte", value: perUseful, unit: "bytes/byte",
                    goal: .atMost(1.05)),
                Report.Figure(
                    metric: "webdav.pull.nothing_new_downloaded", value: idle.max() ?? 0, unit: "bytes",
                    goal: .atMost(0)),
            ]
        )
    }
}
