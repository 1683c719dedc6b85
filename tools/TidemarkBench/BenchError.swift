/// Why a run stopped: the benchmark would otherwise report numbers that mean nothing.
enum BenchError: Error, CustomStringConvertible {
    /// A side's connection is not in WAL mode with `synchronous=NORMAL` (1).
    case connectionSettings(side: Side, journalMode: String, synchronous: String)
    /// After a phase, the table or the captured history is not what the phase should have left.
    case unexpectedState(metric: String, side: Side, what: String, expected: Int64, found: Int64)

    /// Tidemark and its baseline ended with different tables, so their timings are not comparable.
    case baselineMismatch(what: String, ours: [Int64], baseline: [Int64])
    /// A pull in the folder workload skipped files or needed a snapshot, so its bundles cannot be
    /// replayed one by one.
    case folderWarnings([String])

    var description: String {
        switch self {
        case let .connectionSettings(side, journalMode, synchronous):
            "the \(side) connection has journal_mode=\(journalMode), synchronous=\(synchronous); expected wal, 1"
        case let .unexpectedState(metric, side, what, expected, found):
            "\(metric) on the \(side) side: expected \(expected) \(what), found \(found)"
        case let .baselineMismatch(what, ours, baseline):
            "the \(what) differs from the baseline's: \(ours) against \(baseline)"
        case let .folderWarnings(warnings):
            "a pull in the folder workload did not apply plain bundles only: " + warnings.joined(separator: "; ")
        }
    }
}
