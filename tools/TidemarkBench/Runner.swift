import Foundation

/// Runs workloads on both sides, alternating them every repetition so machine noise hits both.
struct Runner {
    /// Measured repetitions.
    var repetitions: Int
    /// Leading repetitions run on both sides and discarded.
    var warmUps: Int

    /// Runs `workload` `warmUps + repetitions` times per side, each time on fresh files under
    /// `scratch`, and returns one report row per phase.
    func run(_ workload: Workload, in scratch: URL) throws -> [Report.Row] {
        var samples: [Side: [[Double]]] = [:]
        for side in Side.allCases { samples[side] = Array(repeating: [], count: workload.phases.count) }
        for round in 0..<(warmUps + repetitions) {
            let measured = round >= warmUps
            Output.progress(
                "\(workload.name): " + (measured ? "repetition \(round - warmUps + 1)/\(repetitions)" : "warm-up"))
            for side in Side.allCases {
                let times = try Fixtures.withFreshTarget(side, under: scratch) { target in
                    try workload.phases.map { phase in try timed(phase, on: target) }
                }
                if measured {
                    for (index, time) in times.enumerated() { samples[side]![index].append(time.seconds) }
                }
            }
        }
        return workload.phases.enumerated().flatMap { index, phase in
            [
                Report.Row(
                    metric: phase.metric, ours: Measurement(samples: samples[.tracked]![index]),
                    baseline: Measurement(samples: samples[.untracked]![index]), baselineName: "untracked", unit: "s",
                    goal: .atMost(phase.goal)),
                // Not Tidemark: what the simplest capture trigger costs over the same baseline.
                Report.Row(
                    metric: phase.metric + ".trigger_floor", ours: Measurement(samples: samples[.triggerFloor]![index]),
                    baseline: Measurement(samples: samples[.untracked]![index]), baselineName: "untracked", unit: "s",
                    goal: nil),
            ]
        }
    }

    /// Times one phase, then checks (untimed) that it did what it should.
    private func timed(_ phase: Workload.Phase, on target: any BenchTarget) throws -> Duration {
        let capturedBefore = target.capturedChanges
        let time = try ContinuousClock().measure { try phase.run(target) }
        let count = try target.read { db in try Int64.fetchOne(db, sql: phase.check.sql) ?? -1 }
        guard count == phase.check.expected else {
            throw BenchError.unexpectedState(
                metric: phase.metric, side: target.side, what: "from `\(phase.check.sql)`",
                expected: phase.check.expected,
                found: count)
        }
        if let before = capturedBefore, let after = target.capturedChanges, after - before != phase.capturedChanges {
            throw BenchError.unexpectedState(
                metric: phase.metric, side: target.side, what: "captured changes", expected: phase.capturedChanges,
                found: after - before)
        }
        return time
    }
}
