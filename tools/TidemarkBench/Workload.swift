/// A benchmark: phases that run in order on one fresh target per repetition, each timed on its own.
/// A phase starts from the state the previous one left (insert → update → delete).
struct Workload {
    /// A count query and the result it must give after a phase.
    struct Check {
        var sql: String
        var expected: Int64
    }

    /// One timed step, reported as one metric.
    struct Phase {
        /// The metric name, e.g. `capture.insert.single_tx`.
        var metric: String
        /// The largest tracked/untracked ratio of medians that meets the goal.
        var goal: Double
        /// What the table must hold afterwards (checked outside the timed region).
        var check: Check
        /// How many changes the tracked side must seal into history during the phase.
        var capturedChanges: Int64
        /// The timed work.
        var run: (any BenchTarget) throws -> Void
    }

    var name: String
    var phases: [Phase]
}
