import Foundation
import TidemarkTestSupport

/// Runs the trials: each starts one `sync` command on one replica, SIGKILLs it after a random
/// delay, checks the store and the exchange folder, reruns the command, and checks again. At the
/// end every replica pushes and pulls until all hold the same rows.
struct TrialRunner {
    let cluster: Cluster
    let seed: UInt64
    /// A fixed upper bound for kill delays; nil to scale each command's bound to its usual duration.
    let maxDelay: Duration?
    /// Prints progress lines.
    let say: (String) -> Void

    var random: SeededGenerator
    var ledger = TagLedger()
    /// Per replica, the tags last seen with all their rows: rows are never deleted, so this only grows.
    var present: [Set<String>]
    /// Per command, a running estimate of how long it takes when not killed.
    var usualDuration: [TrialCommand: Duration] = [:]
    /// The commands still to draw in the current round: every round runs each command once, in a
    /// random order, so every command gets an equal share of the trials.
    var deck: [TrialCommand] = []
    /// The trial being run, for failure reports.
    var current: Summary.Failure?
    var summary = Summary()

    /// The author every harness write records.
    static let author = "crash-harness"

    init(cluster: Cluster, seed: UInt64, maxDelay: Duration?, say: @escaping (String) -> Void) {
        self.cluster = cluster
        self.seed = seed
        self.maxDelay = maxDelay
        self.say = say
        random = SeededGenerator(seed: seed)
        present = Array(repeating: [], count: cluster.members.count)
    }

    // MARK: - Trials

    /// Runs `count` trials, then the final convergence.
    mutating func run(trials count: Int) {
        if count > 0 {
            for trial in 1...count { runTrial(trial) }
        }
        converge()
    }

    /// What a trial runs and what it expects after the rerun.
    struct Plan {
        var arguments: [String]
        /// exec: the tag it writes.
        var tag: String?
        /// import: the tags the bundle brings that the target lacked.
        var newTags: Set<String> = []
        /// pull: the tags the replica that pushed held.
        var sourceTags: Set<String> = []
    }

    /// Long by design: one trial, step by step: the command, the kill, the checks that follow, each failure named.
    mutating func runTrial(_ trial: Int) {
        if deck.isEmpty { deck = TrialCommand.allCases.shuffled(using: &random) }
        let command = deck.removeLast()
        let count = cluster.members.count
        let target = Int.random(in: 0..<count, using: &random)
        let other = (target + Int.random(in: 1..<count, using: &random)) % count
        let delay = drawDelay(for: command)
        current = Summary.Failure(
            trial: trial, command: command, replica: cluster.members[target].name, delay: delay, message: "")
        summary.counts[command, default: Summary.Counts()].trials += 1
        let failuresBefore = summary.failures.count
        let exportFile = cluster.exports + "/trial-\(trial).tmb"
        defer { try? FileManager.default.removeItem(atPath: exportFile) }

        guard let plan = plan(command: command, trial: trial, target: target, other: other, exportFile: exportFile)
        else {
            return
        }
        let beforeFolder = FolderInspector.inspect(cluster.shared)

        // The interrupted run.
        let outcome: ChildProcess.KillOutcome
        do { outcome = try cluster.command(plan.arguments).run(killingAfter: delay) } catch {
            fail("\(error)")
            return
        }
        var line =
            "trial \(trial) \(command.rawValue) \(cluster.members[target].name) kill after \(Summary.milliseconds(delay)): "
        if outcome.killedMidCommand {
            summary.counts[command]!.killedMidCommand += 1
            line += "killed mid-command"
        } else {
            summary.counts[command]!.finishedBeforeKill += 1
            line += "finished first (\(Summary.milliseconds(outcome.result.duration)))"
            expectClean(outcome.result, "the run that was not killed")
            if outcome.result.succeeded, let tag = plan.tag { ledger.acknowledge(tag) }
        }

        // After the kill: the store and the folder are sound, and nothing is half applied.
        let afterKill = checkReplica(target, when: "after the kill")
        let afterFolder = checkFolder(when: "after the kill")
        if outcome.killedMidCommand,
            effectComplete(command, plan: plan, target: afterKill, before: beforeFolder, after: afterFolder)
        {
            summary.counts[command]!.killedAfterEffect += 1
            line += ", after its effect"
        }
        if command == .import, let afterKill {
            let applied = plan.newTags.intersection(afterKill)
            if !applied.isEmpty && applied != plan.newTags {
                fail(
                    "the bundle was partly applied after the kill: \(applied.count) of its \(plan.newTags.count) new tags are present"
                )
            }
        }

        // The rerun completes, and does what the command promises.
        do {
            let rerun = try cluster.run(plan.arguments)
            noteDuration(rerun.duration, of: command)
            expectClean(rerun, "the rerun")
            if rerun.succeeded, let tag = plan.tag { ledger.acknowledge(tag) }
        } catch {
            fail("\(error)")
        }
        let afterRerun = checkReplica(target, when: "after the rerun")
        checkCompletion(command, plan: plan, target: target, holds: afterRerun ?? [])
        _ = checkFolder(when: "after the rerun")

        // Another replica pulls: whatever the kill left in the folder must not break it.
        if let pull = mustRun(
            ["pull", "--store", cluster.members[other].store, "--from", cluster.shared],
            step: "a pull by \(cluster.members[other].name)")
        {
            _ = pull
            let holds = checkReplica(other, when: "after its pull")
            if command == .push, let afterRerun, let holds, !afterRerun.isSubset(of: holds) {
                fail(
                    "\(cluster.members[other].name) pulled but lacks \(afterRerun.subtracting(holds).count) tags \(cluster.members[target].name) had pushed"
                )
            }
        }
        say(line + (summary.failures.count > failuresBefore ? "  FAILED" : ""))
    }

    /// Builds the trial's command after running its preparation (writes, pushes, an export to
    /// `exportFile`); returns nil after a failed preparation.
    /// Long by design: one case per command, each with the arguments and the expectation of its trial.
    mutating func plan(command: TrialCommand, trial: Int, target: Int, other: Int, exportFile file: String)
        -> Plan?
    {
        let members = cluster.members
        switch command {
        case .exec:
            let tag = "t\(trial)"
            return Plan(arguments: writeArguments(tag: tag, on: target), tag: tag)
        case .import:
            guard write(tag: "t\(trial)-source", on: other) else { return nil }
            guard
                let token = mustRun(
                    ["token", "--store", members[target].store], step: "token of \(members[target].name)")
            else { return nil }
            let since = token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            guard
                mustRun(
                    ["export", "--store", members[other].store, "--since", since, "--out", file],
                    step: "export by \(members[other].name)") != nil
            else { return nil }
            let inBundle: Set<String>
            do { inBundle = try FolderInspector.tags(inBundle: file) } catch {
                fail("the exported bundle does not verify: \(error)")
                return nil
            }
            let holds = (try? tags(heldBy: target)) ?? present[target]
            let newTags = inBundle.subtracting(holds)
            guard !newTags.isEmpty else {
                fail("harness: the exported bundle brings nothing new to \(members[target].name)")
                return nil
            }
            return Plan(arguments: ["import", "--store", members[target].store, file], newTags: newTags)
        case .push:
            if Int.random(in: 0..<10, using: &random) < 6, !write(tag: "t\(trial)-before-push", on: target) {
                return nil
            }
            return Plan(arguments: ["push", "--store", members[target].store, "--to", cluster.shared])
        case .pull:
            if Int.random(in: 0..<10, using: &random) < 6, !write(tag: "t\(trial)-before-pull", on: other) {
                return nil
            }
            guard
                mustRun(
                    ["push", "--store", members[other].store, "--to", cluster.shared],
                    step: "push by \(members[other].name)") != nil
            else { return nil }
            let sourceTags = (try? tags(heldBy: other)) ?? present[other]
            return Plan(
                arguments: ["pull", "--store", members[target].store, "--from", cluster.shared], sourceTags: sourceTags)
        case .prune:
            // Give the prune work: the target's history reaches everyone, whose watermarks it then reads.
            guard
                mustRun(
                    ["push", "--store", members[target].store, "--to", cluster.shared],
                    step: "push by \(members[target].name)") != nil
            else { return nil }
            for index in members.indices where index != target {
                guard
                    mustRun(
                        ["pull", "--store", members[index].store, "--from", cluster.shared, "--no-prune"],
                        step: "pull by \(members[index].name)") != nil
                else { return nil }
            }
            guard
                mustRun(
                    ["pull", "--store", members[target].store, "--from", cluster.shared, "--no-prune"],
                    step: "pull by \(members[target].name)") != nil
            else { return nil }
            return Plan(arguments: ["prune", "--store", members[target].store])
        }
    }

    // MARK: - Writes

    /// `sync exec` arguments for one transaction inserting 2–200 rows of `tag`, one statement per
    /// row (`INSERT OR IGNORE`, so rerunning it after a kill that landed after the commit is a no-op).
    mutating func writeArguments(tag: String, on replica: Int) -> [String] {
        let rowCount =
            Int.random(in: 0..<10, using: &random) < 7
            ? Int.random(in: 2...20, using: &random) : Int.random(in: 50...200, using: &random)
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        var statements: [String] = []
        for n in 1...rowCount {
            let payload = String(
                (0..<Int.random(in: 8...300, using: &random)).map { _ in letters.randomElement(using: &random)! })
            statements.append(
                "INSERT OR IGNORE INTO items(id, tag, n, payload) VALUES ('\(tag)-\(n)', '\(tag)', \(n), '\(payload)');"
            )
        }
        ledger.register(tag, rowCount: rowCount, origin: replica)
        return [
            "exec", "--store", cluster.members[replica].store, "--author", Self.author, "--context", tag,
            statements.joined(separator: "\n"),
        ]
    }

    /// Runs a write that is not killed; returns whether it succeeded.
    mutating func write(tag: String, on replica: Int) -> Bool {
        let arguments = writeArguments(tag: tag, on: replica)
        guard mustRun(arguments, step: "write \(tag) on \(cluster.members[replica].name)") != nil else { return false }
        ledger.acknowledge(tag)
        return true
    }

    // MARK: - Kill timing

    /// A delay drawn uniformly from zero to 1.25 times the command's usual duration (or to the
    /// fixed bound), so that most kills land while it runs and some after it finished.
    mutating func drawDelay(for command: TrialCommand) -> Duration {
        let bound = maxDelay ?? (usualDuration[command] ?? .milliseconds(80)) * 1.25
        let microseconds = max(Int64(Summary.seconds(bound) * 1_000_000), 1)
        return .microseconds(Int64.random(in: 0...microseconds, using: &random))
    }

    mutating func noteDuration(_ duration: Duration, of command: TrialCommand) {
        usualDuration[command] = usualDuration[command].map { $0 * 0.7 + duration * 0.3 } ?? duration
    }

    // MARK: - Convergence

    /// Every replica pushes and pulls, in rounds, until all hold the same rows, including every
    /// write that was acknowledged or seen on any replica; then each store and the folder are
    /// checked once more.
    mutating func converge() {
        current = nil
        let members = cluster.members
        let required = present.reduce(ledger.acknowledgedTags) { $0.union($1) }
        for round in 1...6 {
            for member in members {
                _ = mustRun(
                    ["push", "--store", member.store, "--to", cluster.shared], step: "final push by \(member.name)")
                _ = mustRun(
                    ["pull", "--store", member.store, "--from", cluster.shared], step: "final pull by \(member.name)")
            }
            let rows = members.map { try? StoreInspector.rows(of: $0.store) }
            let complete = members.indices.allSatisfy { required.isSubset(of: (try? tags(heldBy: $0)) ?? []) }
            if complete, let first = rows.first ?? nil, rows.allSatisfy({ $0 == first }) {
                summary.convergenceRounds = round
                break
            }
        }
        if summary.convergenceRounds == nil {
            for index in members.indices {
                let held = (try? tags(heldBy: index)) ?? []
                fail(
                    "\(members[index].name) did not converge: lacks \(required.subtracting(held).sorted().prefix(8)) of \(required.count) tags"
                )
            }
        }
        for index in members.indices { checkReplica(index, when: "at the end") }
        summary.temporariesLeft = checkFolder(when: "at the end").temporaries
        let rows = members.map { (try? StoreInspector.rows(of: $0.store))?.count ?? -1 }
        say(
            "converged: \(summary.convergenceRounds.map { "yes, after \($0) round(s)" } ?? "NO"); rows per replica \(rows); \(required.count) writes"
        )
    }
}
