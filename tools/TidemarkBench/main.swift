import ArgumentParser
import Foundation

/// `tidemark-bench`: measures what history capture costs, as tracked time over untracked time.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidemark-bench",
        abstract: "Measure the history-capture overhead: the same writes on a tracked and an untracked table.",
        discussion: """
            Each workload runs R times (after one discarded warm-up) on fresh files, alternating the \
            tracked side (Store.write, capture triggers and sealing) and the untracked side (plain GRDB). \
            A metric meets its goal when the tracked median is at most `goal` times the untracked median.
            """,
        subcommands: [ChildExport.self, ChildImport.self])

    @OptionGroup var options: BenchOptions

    func run() throws {
        let info = RunInfo.current(options: options)
        if options.json {
            Output.progress(info.header)
        } else {
            Output.write(info.header + "\n")
        }
        let rows = Fixtures.Rows(count: options.rows)
        let workloads = [
            CaptureWorkload.make(rows: rows, batch: rows.count, label: "single_tx"),
            CaptureWorkload.make(rows: rows, batch: options.batch, label: "batched_tx"),
        ]
        let runner = Runner(repetitions: options.repetitions, warmUps: 1)
        var report = Report()
        try Fixtures.withScratchDirectory { scratch in
            for workload in workloads {
                report.rows += try runner.run(workload, in: scratch)
            }
        }
        if options.changes > 0 {
            try Fixtures.withScratchDirectory { scratch in
                let result = try BundleWorkload.run(changes: options.changes, in: scratch)
                let megabyte = 1024.0 * 1024.0
                report.figures += [
                    .init(metric: "bundle.bytes_per_change", value: result.bytesPerChange, unit: "bytes", goal: nil),
                    .init(metric: "bundle.export.throughput", value: Double(result.changes) / result.export.seconds, unit: "changes/s", goal: nil),
                    .init(metric: "bundle.import.throughput", value: Double(result.changes) / result.import.seconds, unit: "changes/s", goal: nil),
                    .init(metric: "bundle.export.peak_memory", value: Double(result.export.peakBytes) / megabyte, unit: "MiB", goal: 100),
                    .init(metric: "bundle.import.peak_memory", value: Double(result.import.peakBytes) / megabyte, unit: "MiB", goal: 100),
                ]
            }
        }
        Output.write(options.json ? try report.jsonLines() : report.table() + (report.figures.isEmpty ? "" : "bundle workload, \(options.changes) changes:\n" + report.figureTable()))
    }
}

BenchCommand.main()
