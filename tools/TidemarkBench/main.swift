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
            """)

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
        Output.write(options.json ? try report.jsonLines() : report.table())
    }
}

BenchCommand.main()
