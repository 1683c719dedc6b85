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
        case .connectionSettings(let side, let journalMode, let synchronous):
            "the \(side) connection has journal_mode=\(journalMode), synchronous=\(synchronous); expected wal, 1"
        case .unexpectedState(let metric, let side, let what, let expected, let found):
            "\(metric) on the \(side) side: expected \(expected) \(what), found \(found)"
        case .baselineMismatch(let what, let ours, let baseline):
            "the \(what) differs from the baseline's: \(ours) against \(baseline)"
        case .folderWarnings(let warnings):
            "a pull in the folder workload did not apply plain bundles only: " + warnings.joined(separator: "; ")
        }
    }
}
