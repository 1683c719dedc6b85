import Foundation

/// What a run of trials came to, printed at the end.
struct Summary {
    /// Per command: how its trials went.
    struct Counts {
        /// Trials of this command.
        var trials = 0
        /// Trials whose SIGKILL reached the command while it ran.
        var killedMidCommand = 0
        /// Trials whose command exited before its kill time.
        var finishedBeforeKill = 0
        /// Killed trials whose effect was already complete when the kill landed (e.g. the write
        /// committed, the bundle was published): the kill hit the very end of the command.
        var killedAfterEffect = 0
    }

    /// A broken rule, with what is needed to replay it.
    struct Failure {
        /// The trial number (1-based), or nil for setup and the final convergence.
        var trial: Int?
        /// The command interrupted.
        var command: TrialCommand?
        /// The replica it ran on.
        var replica: String?
        /// The kill delay drawn for the trial.
        var delay: Duration?
        /// What went wrong.
        var message: String
    }

    var counts: [TrialCommand: Counts] = [:]
    var failures: [Failure] = []
    /// Pull warnings that named a temporary file as still being written (retryable, not failures).
    var temporaryWarnings = 0
    /// Pull warnings that named a temporary abandoned by a killed writer (reported once per peer).
    var abandonedTemporaryWarnings = 0
    /// Temporary files left in the exchange folder at the end.
    var temporariesLeft: [String] = []
    /// Rounds of push and pull the replicas needed to converge at the end (nil if they did not).
    var convergenceRounds: Int?

    /// The report, as lines.
    func lines(seed: UInt64, trials: Int, elapsed: Duration) -> [String] {
        var out = ["", "summary  seed \(seed), \(trials) trials in \(String(format: "%.1f", Self.seconds(elapsed))) s"]
        out.append("  command  trials  killed mid-command  (after its effect)  finished before kill")
        for command in TrialCommand.allCases {
            let c = counts[command] ?? Counts()
            out.append(
                "  " + command.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)
                    + String(
                        format: "  %6d  %18d  %18d  %20d", c.trials, c.killedMidCommand, c.killedAfterEffect,
                        c.finishedBeforeKill))
        }
        let total = counts.values.reduce(Counts()) { a, c in
            Counts(
                trials: a.trials + c.trials, killedMidCommand: a.killedMidCommand + c.killedMidCommand,
                finishedBeforeKill: a.finishedBeforeKill + c.finishedBeforeKill,
                killedAfterEffect: a.killedAfterEffect + c.killedAfterEffect)
        }
        out.append(
            "  total    "
                + String(
                    format: "%6d  %18d  %18d  %20d", total.trials, total.killedMidCommand, total.killedAfterEffect,
                    total.finishedBeforeKill))
        out.append("  pull warnings about temporaries still being written: \(temporaryWarnings)")
        out.append("  pull warnings about abandoned temporaries: \(abandonedTemporaryWarnings)")
        out.append("  temporary files left in the exchange folder at the end: \(temporariesLeft.count)")
        out.append(
            "  convergence: "
                + (convergenceRounds.map { "all replicas hold the same rows after \($0) round(s) of push and pull" }
                    ?? "NOT reached"))
        if failures.isEmpty {
            out.append("ok  no failures")
        } else {
            out.append("FAILED  \(failures.count) failure(s):")
            for failure in failures {
                var place = failure.trial.map { "trial \($0)" } ?? "final"
                if let command = failure.command { place += " \(command.rawValue)" }
                if let replica = failure.replica { place += " on \(replica)" }
                if let delay = failure.delay { place += ", kill after \(Self.milliseconds(delay))" }
                out.append("  [\(place)] \(failure.message)")
                if let trial = failure.trial {
                    out.append(
                        "    replay: tidemark-crash --seed \(seed) --trials \(trial)   (same commands; kill timing may differ)"
                    )
                }
            }
        }
        return out
    }

    /// A duration in seconds.
    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `12.3ms`.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1fms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}
