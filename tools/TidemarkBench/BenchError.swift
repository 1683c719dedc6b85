/// Why a run stopped: the benchmark would otherwise report numbers that mean nothing.
enum BenchError: Error, CustomStringConvertible {
    /// A side's connection is not in WAL mode with `synchronous=NORMAL` (1).
    case connectionSettings(side: Side, journalMode: String, synchronous: String)
    /// After a phase, the table or the captured history is not what the phase should have left.
    case unexpectedState(metric: String, side: Side, what: String, expected: Int64, found: Int64)

    var description: String {
        switch self {
        case let .connectionSettings(side, journalMode, synchronous):
            "the \(side) connection has journal_mode=\(journalMode), synchronous=\(synchronous); expected wal, 1"
        case let .unexpectedState(metric, side, what, expected, found):
            "\(metric) on the \(side) side: expected \(expected) \(what), found \(found)"
        }
    }
}
