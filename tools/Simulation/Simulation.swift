import ArgumentParser
import Foundation
import ReferenceModel
import Tidemark
import TidemarkTestSupport

/// `tidemark-sim`: many replicas, many random writes interleaved with random pairwise exchanges,
/// then all-pairs gossip until every replica holds the same token. Reports how long convergence
/// took and checks every replica against the others and against the reference model.
@main
struct Simulation: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidemark-sim",
        abstract: "Simulates replicas writing and gossiping, and checks that they converge.")

    @Option(help: "Number of replicas.") var replicas = 50
    @Option(help: "Random write transactions, spread across the replicas.") var operations = 100_000
    @Option(help: "Seed (decimal); random when omitted.") var seed: UInt64?
    @Option(help: "Average writes between two random pairwise exchanges.") var exchangeEvery = 10
    @Option(help: "Key space: users.") var users = 2_000
    @Option(help: "Key space: posts.") var posts = 4_000
    @Option(help: "Value space: distinct emails (clashes under UNIQUE).") var emails = 1_500
    @Option(help: "Most operations in one transaction (each transaction counts as one operation).") var maxOperations =
        1
    @Flag(help: "Keep the replicas' directory instead of removing it.") var keep = false

    func validate() throws {
        guard replicas >= 2 else { throw ValidationError("--replicas must be at least 2") }
        guard operations >= 0, exchangeEvery >= 1 else {
            throw ValidationError("--operations must be ≥ 0 and --exchange-every ≥ 1")
        }
        guard users >= 1, posts >= 1, emails >= 1, maxOperations >= 1 else {
            throw ValidationError("key spaces must be at least 1")
        }
    }

    /// Long by design: the command: options, the simulated cluster, its phases and the printed report, in order.
    func run() throws {
        let seed = self.seed ?? UInt64.random(in: 0...UInt64.max)
        var rng = SeededGenerator(seed: seed)
        print(
            "seed=\(seed) replicas=\(replicas) operations=\(operations) exchange-every=\(exchangeEvery) space=\(users)u/\(posts)p/\(emails)e"
        )
        let directory = NSTemporaryDirectory() + "tidemark-sim-\(seed)"
        try? FileManager.default.removeItem(atPath: directory)
        defer { if !keep { try? FileManager.default.removeItem(atPath: directory) } }
        let cluster = try SimCluster(directory: directory, count: replicas, rng: &rng)
        let space = RandomWorkload.Space(users: users, posts: posts, emails: emails)
        var workloads = (0..<replicas).map { RandomWorkload(space: space, tag: "r\($0)") }

        // Writes interleaved with random pairwise exchanges.
        let start = Date()
        var progress = start
        var committed = 0
        for i in 0..<operations {
            cluster.time.advance(by: Int64.random(in: 0...1, using: &rng))
            let r = Int.random(in: 0..<replicas, using: &rng)
            let sql = workloads[r].transaction(using: &rng, maxOperations: maxOperations).joined(separator: ";\n")
            if try cluster.stores[r].execute(sql: sql, author: "sim").1 != nil { committed += 1 }
            if Int.random(in: 0..<exchangeEvery, using: &rng) == 0 {
                let a = Int.random(in: 0..<replicas, using: &rng)
                let b = (a + Int.random(in: 1..<replicas, using: &rng)) % replicas
                try cluster.exchange(from: a, to: b, phase: .writes)
            }
            if Date().timeIntervalSince(progress) > 30 {
                progress = Date()
                log(
                    "  \(i + 1)/\(operations) operations, \(cluster.statistics(.writes).bundles) bundles, \(Int(progress.timeIntervalSince(start))) s"
                )
            }
        }
        let writeTime = Date().timeIntervalSince(start)

        // All-pairs gossip until quiescent.
        let gossipStart = Date()
        var rounds = 0
        var roundLog: [String] = []
        repeat {
            rounds += 1
            let before = cluster.statistics(.gossip)
            for a in 0..<replicas {
                for b in 0..<replicas where b != a { try cluster.exchange(from: a, to: b, phase: .gossip) }
            }
            roundLog.append(
                "round \(rounds): \(cluster.statistics(.gossip).bundles - before.bundles) bundles, \(cluster.statistics(.gossip).transactions - before.transactions) transactions applied"
            )
            log("  gossip " + roundLog.last!)
        } while try !cluster.quiescent() && rounds < 50
        let gossipTime = Date().timeIntervalSince(gossipStart)

        // Checks.
        let checkStart = Date()
        let report = try Verification(cluster: cluster).run()
        let checkTime = Date().timeIntervalSince(checkStart)

        print(
            Summary(
                seed: seed, replicas: replicas, operations: operations, committed: committed, writeTime: writeTime,
                gossipTime: gossipTime, checkTime: checkTime, rounds: rounds, roundLog: roundLog, cluster: cluster,
                report: report
            ).text)
        if !report.problems.isEmpty {
            log("all \(report.problems.count) problems:")
            for problem in report.problems { log("  " + problem) }
            throw ExitCode(1)
        }
    }

    func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
