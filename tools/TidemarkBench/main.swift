import ArgumentParser
import Foundation

/// `tidemark-bench`: every workload of the benchmark table against its baseline, in one process.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidemark-bench",
        abstract: "Measure Tidemark against plain SQLite and the SQLite session extension.",
        discussion: """
            Each compared metric runs ours and the baseline in this process, alternating them every \
            repetition after a discarded warm-up, on fresh files. The ratio is our median over the \
            baseline's; a goal is `≤` for times and sizes and `≥` for throughputs. Peak memory is \
            measured in child processes. BENCHMARKS.md records results and how to read them.
            """,
        subcommands: [ChildExport.self, ChildImport.self])

    @OptionGroup var options: BenchOptions

    /// Long by design: the command: options, each selected workload in turn, the report.
    func run() throws {
        let info = RunInfo.current(options: options)
        if options.json { Output.progress(info.header) } else { Output.write(info.header + "\n") }
        var report = Report()
        for workload in options.workloads {
            try Fixtures.withScratchDirectory { scratch in
                switch workload {
                case .capture:
                    let rows = Fixtures.Rows(count: options.rows)
                    let runner = Runner(repetitions: options.repetitions, warmUps: 1)
                    for capture in [
                        CaptureWorkload.make(rows: rows, batch: rows.count, label: "single_tx"),
                        CaptureWorkload.make(rows: rows, batch: options.batch, label: "batched_tx"),
                    ] {
                        report.rows += try runner.run(capture, in: scratch)
                    }
                case .changeset:
                    report.rows += try ChangesetWorkload(
                        mix: ChangeMix(changes: options.changes), repetitions: options.repetitions
                    )
                    .run(in: scratch)
                case .memory:
                    report.figures += try MemoryWorkload(sizes: options.memoryChanges).run(in: scratch)
                case .folder:
                    let result = try FolderWorkload(
                        replicas: options.replicas, operationsPerReplica: options.operations, seed: options.seed
                    )
                    .run(in: scratch)
                    report.rows += result.rows
                    report.figures += result.figures
                case .history:
                    let result = try HistoryWorkload(
                        transactions: options.transactions, repetitions: options.repetitions
                    ).run(in: scratch)
                    report.rows += result.rows
                    report.figures += result.figures
                    report.rows.append(
                        try ForeignKeyImport(rows: options.transactions, repetitions: options.repetitions).run(
                            in: scratch))
                case .schema:
                    report.rows += try SchemaWorkload(rows: options.rows, repetitions: options.repetitions).run(
                        in: scratch)
                case .encryption:
                    report.rows += try EncryptionWorkload(changes: options.changes, repetitions: options.repetitions)
                        .run(in: scratch)
                case .webdav:
                    let result = try WebDAVWorkload(changes: options.changes, repetitions: options.repetitions)
                        .run(in: scratch)
                    report.rows += result.rows
                    report.figures += result.figures
                case .fanout:
                    report.figures += try FanoutWorkload(sizes: options.fanout, rowsPerReplica: options.fanoutRows)
                        .run(in: scratch)
                case .join:
                    report.rows += try JoinWorkload(rows: options.rows, repetitions: options.repetitions).run(
                        in: scratch)
                case .appwriter:
                    report.rows += try AppWriterWorkload(
                        transactions: options.operations, repetitions: options.repetitions
                    ).run(in: scratch)
                }
            }
        }
        Output.write(options.json ? try report.jsonLines() : report.text())
        if let path = options.jsonOutput {
            try Data((try report.jsonLines()).utf8).write(to: URL(fileURLWithPath: path))
        }
    }
}

BenchCommand.main()
