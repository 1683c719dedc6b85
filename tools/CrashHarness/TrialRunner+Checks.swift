import Foundation
import TidemarkTestSupport

/// What a trial checks after each step: the store, the exchange folder, the command's outcome.
extension TrialRunner {
    /// Integrity, per-tag all-or-nothing, nothing lost, and history shape of one replica; returns
    /// the tags it holds in full (nil if they could not be read).
    @discardableResult
    mutating func checkReplica(_ index: Int, when: String) -> Set<String>? {
        let member = cluster.members[index]
        if let problem = StoreInspector.integrityProblem(of: member.store) {
            fail("\(member.name) \(when): \(problem)")
        }
        let counts: [String: Int]
        do { counts = try StoreInspector.tagCounts(of: member.store) } catch {
            fail("\(member.name) \(when): cannot read its rows: \(error)")
            return nil
        }
        var holds = Set<String>()
        for (tag, count) in counts.sorted(by: { $0.key < $1.key }) {
            guard let expected = ledger.rowCount(of: tag) else {
                fail("\(member.name) \(when): holds \(count) rows of tag \(tag), which the harness never wrote")
                continue
            }
            if count == expected {
                holds.insert(tag)
            } else {
                fail("\(member.name) \(when): holds \(count) of the \(expected) rows of tag \(tag)")
            }
        }
        let lost = present[index].subtracting(holds)
        if !lost.isEmpty { fail("\(member.name) \(when): lost tags it held before: \(lost.sorted().prefix(8))") }
        let unacknowledged = ledger.acknowledged(by: index).subtracting(holds)
        if !unacknowledged.isEmpty {
            fail("\(member.name) \(when): lacks its own acknowledged writes \(unacknowledged.sorted().prefix(8))")
        }
        for problem in StoreInspector.history(of: member.store, ledger: ledger).problems {
            fail("\(member.name) \(when): \(problem)")
        }
        present[index] = present[index].union(holds)
        return holds
    }

    /// Every final-name file in the exchange folder verifies.
    mutating func checkFolder(when: String) -> FolderInspector.Facts {
        let facts = FolderInspector.inspect(cluster.shared)
        for problem in facts.problems { fail("exchange folder \(when): \(problem)") }
        return facts
    }

    /// Whether a killed command had already done what it is for.
    func effectComplete(
        _ command: TrialCommand, plan: Plan, target holds: Set<String>?, before: FolderInspector.Facts,
        after: FolderInspector.Facts
    ) -> Bool {
        switch command {
        case .exec: return plan.tag.map { holds?.contains($0) ?? false } ?? false
        case .import: return plan.newTags.isSubset(of: holds ?? [])
        case .pull: return plan.sourceTags.isSubset(of: holds ?? [])
        case .push:
            return !Set(after.bundleTags.keys).subtracting(before.bundleTags.keys).filter { $0.hasSuffix(".tmb") }
                .isEmpty
        case .prune: return !Set(before.bundleTags.keys).subtracting(after.bundleTags.keys).isEmpty
        }
    }

    /// After the rerun, the command's whole effect is there.
    mutating func checkCompletion(_ command: TrialCommand, plan: Plan, target: Int, holds: Set<String>) {
        let member = cluster.members[target]
        switch command {
        case .exec:
            guard let tag = plan.tag else { return }
            if !holds.contains(tag) { fail("\(member.name) lacks tag \(tag) after rerunning its write") }
            let facts = StoreInspector.history(of: member.store, ledger: ledger)
            if facts.transactionsPerTag[tag] != 1 {
                fail(
                    "\(member.name): tag \(tag) is in \(facts.transactionsPerTag[tag] ?? 0) history transactions after the rerun, expected 1"
                )
            }
        case .import:
            if !plan.newTags.isSubset(of: holds) {
                fail(
                    "\(member.name) lacks \(plan.newTags.subtracting(holds).sorted().prefix(8)) after rerunning the import"
                )
            }
        case .pull:
            if !plan.sourceTags.isSubset(of: holds) {
                fail(
                    "\(member.name) lacks \(plan.sourceTags.subtracting(holds).sorted().prefix(8)) after rerunning the pull"
                )
            }
        case .push:
            // Lines about its own junk it removed (a temporary that just reached 10 minutes) aside.
            if let again = mustRun(["push", "--store", member.store, "--to", cluster.shared], step: "push again"),
                again.stdout.split(separator: "\n").filter({ !$0.hasPrefix("removed ") }) != ["nothing new to push"]
            {
                fail("a push right after the rerun still pushed: \(again.stdout)")
            }
        case .prune:
            if let dry = mustRun(["prune", "--store", member.store, "--dry-run"], step: "prune --dry-run"),
                !dry.stdout.contains("would remove 0 history transactions, 0 exchange files")
            {
                fail("a dry-run prune right after the rerun would still remove something: \(dry.stdout)")
            }
        }
    }

    /// Requires a completed run to exit 0 with nothing on standard error but pull's warnings about
    /// temporaries (still being written, or abandoned by a killed writer); never a busy or locked error.
    mutating func expectClean(_ result: ChildProcess.Result, _ what: String) {
        var problems: [String] = []
        if !result.succeeded { problems.append("ended with \(result.ending)") }
        for line in result.stderrLines {
            if Self.isTemporaryWarning(line) {
                summary.temporaryWarnings += 1
            } else if Self.isAbandonedTemporaryWarning(line) {
                summary.abandonedTemporaryWarnings += 1
            } else {
                problems.append("stderr: \(line)")
            }
        }
        if !problems.isEmpty { fail("\(what) (\(result.commandLine)) " + problems.joined(separator: "; ")) }
    }

    /// `warning: skipped DIR/ID/.tmp-…: still being written by its sender (will retry on the next pull)`.
    static func isTemporaryWarning(_ line: String) -> Bool {
        line.hasPrefix("warning: skipped ") && line.contains("/.tmp-")
            && line.hasSuffix(": still being written by its sender (will retry on the next pull)")
    }

    /// `warning: skipped DIR/ID/.tmp-…: left by an interrupted write of its sender, …`: a temporary
    /// of a killed writer, unwritten for 10 minutes (runs that long), reported once by each peer.
    static func isAbandonedTemporaryWarning(_ line: String) -> Bool {
        line.hasPrefix("warning: skipped ") && line.contains("/.tmp-")
            && line.contains(": left by an interrupted write of its sender, which removes it on its next push or pull")
    }

    /// Runs a command that is not killed; records a failure and returns nil unless it ran clean.
    mutating func mustRun(_ arguments: [String], step: String) -> ChildProcess.Result? {
        do {
            let result = try cluster.run(arguments)
            let failuresBefore = summary.failures.count
            expectClean(result, step)
            return summary.failures.count == failuresBefore ? result : nil
        } catch {
            fail("\(step): \(error)")
            return nil
        }
    }

    func tags(heldBy index: Int) throws -> Set<String> {
        let counts = try StoreInspector.tagCounts(of: cluster.members[index].store)
        return Set(counts.filter { ledger.rowCount(of: $0.key) == $0.value }.keys)
    }

    mutating func fail(_ message: String) {
        var failure = current ?? Summary.Failure(message: message)
        failure.message = message
        summary.failures.append(failure)
        say("  FAIL \(message)")
    }
}
