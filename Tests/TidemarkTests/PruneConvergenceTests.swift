import Foundation
import GRDB
import ReferenceModel
import Testing
import Tidemark
import TidemarkTestSupport

/// The convergence property with pruning: replicas that sync through one folder while prunes,
/// retirements and returns happen at random moments still end identical, every write the merge
/// rules keep is present everywhere, no deleted row comes back, no prune removes what an active
/// member lacks, and no active member ever sees an expired token from push or pull.
///
/// Pruning deletes the history a reference model would be computed from, so the test collects it
/// as it goes: before anything on a replica may prune, it folds and reads that replica's history
/// into the model (every transaction stays in its origin's history until the origin prunes).
///
/// Each case prints its seed; `TIDEMARK_SEED=<seed> swift test --filter PruneConvergence` replays it
/// (within one build of the code), and `TIDEMARK_TRACE=1` writes the trace even when it passes.
@Suite struct PruneConvergenceTests {
    /// Cases per run; each takes several seconds.
    static let cases = 8
    /// This run's seeds derive from one base seed.
    static let base = SeededGenerator.seed(environment: "TIDEMARK_BASE_SEED")
    /// A seed to replay instead of random cases.
    static var replay: UInt64? {
        ProcessInfo.processInfo.environment["TIDEMARK_SEED"] == nil ? nil : SeededGenerator.seed()
    }

    @Test("random histories with prunes and retirements converge", arguments: 0..<cases)
    func randomHistoriesWithPruning(index: Int) async throws {
        if let seed = Self.replay {
            if index == 0 { try await PruneScenario(seed: seed).run() }
            return
        }
        var mixer = SeededGenerator(seed: Self.base &+ UInt64(index) &+ 0x5052_554e)
        try await PruneScenario(seed: mixer.next()).run()
    }
}

/// One random run: 3–5 replicas, writes, pushes, pulls, prunes and retirements, then quiescence and
/// every check.
struct PruneScenario {
    let seed: UInt64

    /// What happened, written to a file when the run fails.
    final class Log {
        var lines: [String] = []
        var problems: [String] = []
        func add(_ line: String) { lines.append(line) }
        func problem(_ line: String) {
            problems.append(line)
            lines.append("PROBLEM " + line)
        }
    }

    /// The prerequisites a "missing prerequisites: r3 #11, r1 #1..#10, …" warning names, when one
    /// of them is in no bundle of the folder: the bundle cannot apply before that one is published,
    /// whatever else it waits for (a bundle that holds the others reports its own waiting). Nil for
    /// any other warning, or when every one of them was published.
    static func unpublishedPrerequisites(in warning: String, cluster: ConvergenceCluster) throws -> String? {
        guard let start = warning.range(of: "missing prerequisites: "), let end = warning.range(of: " (will retry")
        else { return nil }
        let listed = String(warning[start.upperBound..<end.lowerBound])
        var missing: [(origin: Replica.ID, sequences: ClosedRange<Int64>)] = []
        for item in listed.components(separatedBy: ", ") {
            let parts = item.split(separator: " ")
            let bounds = parts.count == 2 ? parts[1].components(separatedBy: "..").map { Int64($0.dropFirst()) } : []
            guard parts.count == 2, parts[0].hasPrefix("r"), let index = Int(parts[0].dropFirst()),
                cluster.replicas.indices.contains(index),
                (1...2).contains(bounds.count), let first = bounds.first ?? nil, let last = bounds.last ?? nil,
                first <= last
            else { return nil }
            missing.append((cluster.replicas[index].id, first...last))
        }
        let bundles = FolderTree(cluster.folder).files.filter { $0.hasSuffix(".tmb") }.map { cluster.folder + "/" + $0 }
        let ranges = bundles.compactMap { try? ExchangeGroup.header(of: $0) }.flatMap(\.ranges)
        let unpublished = missing.contains { origin, sequences in
            sequences.contains { sequence in
                !ranges.contains { $0.origin == origin && $0.first <= sequence && sequence <= $0.last }
            }
        }
        return unpublished ? listed : nil
    }

    /// Writes one transaction through `execute(sql:)`, through `write` with GRDB, or (a fifth of the
    /// time) through the `sqlite3` shell, as a foreign client; returns which.
    static func write(_ statements: [String], on replica: TestReplica, path: Int) async throws -> String {
        switch path {
        case 0..<5:
            _ = try replica.store.execute(
                sql: statements.joined(separator: ";\n"), author: "app", contextName: "execute")
            return "execute"
        case 5..<8:
            _ = try replica.store.write(author: "app", contextName: "write") { db in
                for statement in statements { try db.execute(sql: statement) }
            }
            return "write"
        default:
            try await SQLiteShell.execute(replica.path, "BEGIN;\n" + statements.map { $0 + ";\n" }.joined() + "COMMIT;")
            // Sealed at once, as its own transaction: foreign writes left pending are sealed
            // together, and one transaction writing a column twice is a merge matter, not pruning's.
            try replica.store.sealForeignWrites()
            return "sqlite3"
        }
    }

    /// An error, saying so when it is the one an active member must never see.
    static func describe(_ error: any Error) -> String {
        if case StoreError.historyTokenExpired = error { return "historyTokenExpired for an active member: \(error)" }
        return "\(error)"
    }

    func run() async throws {
        print("seed=\(seed) (replay: TIDEMARK_SEED=\(seed) swift test --filter PruneConvergence)")
        var rng = SeededGenerator(seed: seed)
        let n = Int.random(in: 3...5, using: &rng)
        let keySeeds = (0..<n).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let skews = (0..<n).map { _ in Int64.random(in: -15...15, using: &rng) }
        let cluster = try ConvergenceCluster(
            schema: CardWorkload.schema, keySeeds: keySeeds, skews: skews, label: "tidemark-prune-convergence")
        let log = Log()
        log.add(
            "seed \(seed): \(n) replicas: " + cluster.replicas.map { "\($0.name) = \($0.id)" }.joined(separator: ", "))
        var workloads = (0..<n).map { CardWorkload(tag: "r\($0)") }
        var model = ReferenceModel(tables: CardWorkload.tables)
        var counts = (
            writes: 0, pushes: 0, pulls: 0, prunes: 0, pruned: 0, dropped: 0, retirements: 0, snapshots: 0
        )

        /// A token as `r0:5 r1:2 …`, by replica name.
        func names(_ token: History.Token) -> String {
            cluster.replicas.enumerated().map { "r\($0.offset):\(token[$0.element.id])" }.joined(separator: " ")
        }
        /// What `r` holds and has pruned, for the trace.
        func state(_ r: Int) throws -> String {
            let store = cluster.replicas[r].store
            return "[holds \(names(try store.currentToken())); pruned \(names(try store.prunedToken()))]"
        }
        /// Folds `r`'s local changes (an export does) and adds its history to the model.
        func harvest(_ r: Int) throws {
            let replica = cluster.replicas[r]
            try replica.export(since: try replica.store.currentToken(), to: cluster.directory.file("fold-r\(r).tmb"))
            model.add(try replica.store.fetchHistory())
        }
        /// Every member that `r` counts as active has applied what a prune by `r` removed.
        func checkHorizon(_ report: Store.PruneReport, by r: Int, label: String) throws {
            for member in try cluster.replicas[r].store.members() where !member.isSelf && !member.retired {
                guard let m = cluster.replicas.firstIndex(where: { $0.id == member.id }) else { continue }
                let holds = try cluster.replicas[m].store.currentToken()
                if !holds.covers(report.horizon) {
                    log.problem(
                        "\(label): r\(r) pruned through \(report.horizon), which active r\(m) lacks (it holds \(holds))"
                    )
                }
            }
        }
        func push(_ r: Int, label: String) throws {
            do {
                let summary = try cluster.replicas[r].store.push(to: cluster.folder, key: cluster.replicas[r].key)
                counts.pushes += 1
                log.add(
                    "\(label): push r\(r): "
                        + (summary.export.map { "\($0.transactionCount) transactions since \(names($0.since))" }
                            ?? "nothing") + " \(try state(r))")
            } catch {
                log.problem("\(label): push r\(r) failed: \(Self.describe(error))")
            }
        }
        func pull(_ r: Int, prune: Bool, label: String) throws {
            try harvest(r)
            do {
                let summary = try cluster.replicas[r].store.pull(
                    from: cluster.folder, key: cluster.replicas[r].key, prune: prune)
                counts.pulls += 1
                let snapshots = summary.imported.filter { $0.header.kind == .snapshot }.count
                counts.snapshots += snapshots
                counts.pruned += summary.prune?.removedTransactions ?? 0
                counts.dropped += summary.prune?.droppedTombstones ?? 0
                log.add(
                    "\(label): pull r\(r)\(prune ? "" : " (no prune)"): \(summary.imported.count) bundles (\(snapshots) snapshots)"
                        + (summary.prune.map { ", pruned \($0.removedTransactions), blockers \($0.blockers)" } ?? "")
                        + " \(try state(r))")
                for warning in summary.warnings {
                    // Waiting is right when a missing transaction is in no bundle yet (its origin
                    // has not pushed it, though a snapshot carried its effects to the sender);
                    // anything else is a problem.
                    if let waiting = try Self.unpublishedPrerequisites(in: warning, cluster: cluster) {
                        log.add("\(label): pull r\(r) waits for \(waiting), in no bundle yet")
                    } else {
                        log.problem("\(label): pull r\(r) warned: \(warning)")
                    }
                }
                if let report = summary.prune { try checkHorizon(report, by: r, label: label) }
            } catch {
                log.problem("\(label): pull r\(r) failed: \(Self.describe(error))")
            }
        }
        func prune(_ r: Int, dryRun: Bool, label: String) throws {
            try harvest(r)
            let replica = cluster.replicas[r]
            let before = dryRun ? (try replica.everything(), FolderTree(cluster.folder)) : nil
            let report = try replica.store.prune(dryRun: dryRun, key: replica.key)
            counts.prunes += 1
            counts.pruned += dryRun ? 0 : report.removedTransactions
            counts.dropped += dryRun ? 0 : report.droppedTombstones
            log.add(
                "\(label): prune r\(r)\(dryRun ? " (dry run)" : ""): \(report.removedTransactions) transactions, "
                    + "\(report.removedFiles.count) files, blockers \(report.blockers) \(try state(r))")
            if let (store, tree) = before {
                let differences = try replica.everything().differences(
                    from: store, mine: "after", theirs: "before", limit: 5)
                if !differences.isEmpty { log.problem("\(label): a dry run changed r\(r): \(differences)") }
                if FolderTree(cluster.folder) != tree { log.problem("\(label): a dry run changed the folder") }
            } else {
                try checkHorizon(report, by: r, label: label)
            }
        }

        // A member goes away for a while after another retires it, and comes back.
        var away: (member: Int, until: Int)?
        let steps = Int.random(in: 220...300, using: &rng)
        for step in 0..<steps {
            cluster.time.advance(by: Int64.random(in: 0...3, using: &rng))
            if let gone = away, step >= gone.until {
                log.add("step \(step): r\(gone.member) comes back")
                away = nil
            }
            let active = (0..<n).filter { $0 != away?.member }
            let label = "step \(step)"
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<45:
                // Any replica writes, the one away included (offline).
                let r = Int.random(in: 0..<n, using: &rng)
                let statements = workloads[r].transaction(using: &rng)
                let how = try await Self.write(
                    statements, on: cluster.replicas[r], path: Int.random(in: 0..<10, using: &rng))
                counts.writes += 1
                log.add("\(label): \(how) on r\(r): \(statements.joined(separator: "; "))")
            case 45..<60:
                try push(active.randomElement(using: &rng)!, label: label)
            case 60..<78:
                try pull(
                    active.randomElement(using: &rng)!, prune: Int.random(in: 0..<4, using: &rng) > 0, label: label)
            case 78..<88:
                try prune(
                    active.randomElement(using: &rng)!, dryRun: Int.random(in: 0..<5, using: &rng) == 0, label: label)
            case 88..<93:
                guard away == nil else { continue }
                let member = Int.random(in: 0..<n, using: &rng)
                let retirer = (0..<n).filter { $0 != member }.randomElement(using: &rng)!
                try cluster.replicas[retirer].store.retire(peer: "r\(member)")
                away = (member, step + Int.random(in: 20...70, using: &rng))
                counts.retirements += 1
                log.add("\(label): r\(retirer) retires r\(member), who stays away until step \(away!.until)")
            default:
                // A full round among the active members, in random order.
                for r in active.shuffled(using: &rng) { try push(r, label: label + " round") }
                for r in active.shuffled(using: &rng) { try pull(r, prune: true, label: label + " round") }
            }
        }
        if let gone = away { log.add("end: r\(gone.member) comes back") }

        // Quiescence: full rounds until every replica holds the same token and the same rows.
        var rounds = 0
        var settled = false
        while rounds < 12 && !settled {
            rounds += 1
            for r in (0..<n).shuffled(using: &rng) { try push(r, label: "quiesce \(rounds)") }
            for r in (0..<n).shuffled(using: &rng) { try pull(r, prune: true, label: "quiesce \(rounds)") }
            let tokens = try cluster.tokens()
            let first = try cluster.replicas[0].tables()
            settled =
                try tokens.allSatisfy { $0 == tokens[0] } && cluster.replicas.allSatisfy { try $0.tables() == first }
        }
        if !settled {
            log.problem("no quiescence after \(rounds) rounds; tokens: \(try cluster.tokens().map(\.description))")
        }
        for r in 0..<n { try harvest(r) }

        // The checks. The model must hold every transaction ever made, or the rest proves little.
        var problems = log.problems
        let made = try cluster.replicas.map { try $0.store.currentToken()[$0.id] }.reduce(0, +)
        if model.transactions.count != Int(made) {
            problems.append("the model holds \(model.transactions.count) of the \(made) transactions made")
        }
        problems += model.mismatches.map { "transaction \($0) differs between replicas" }
        problems += model.unfolded.map { "transaction \($0.0) carries an unfolded change of \($0.1.compact)" }
        let first = try cluster.replicas[0].tables()
        for replica in cluster.replicas.dropFirst() {
            problems += try replica.tables().differences(from: first, mine: replica.name, theirs: "r0")
        }
        let expected = model.rows()
        let states = try cluster.replicas.map { try CardWorkload.rows(of: $0) }
        for (replica, actual) in zip(cluster.replicas, states) {
            problems += ConvergenceChecks.differences(actual, expected).map { "\(replica.name) vs model: \($0)" }
            problems += CardWorkload.violations(in: actual).map { "\(replica.name): \($0)" }
        }
        let checks = ConvergenceChecks(cluster: cluster)
        problems += checks.lostWrites(model, states) + checks.resurrections(model, states)
        for replica in cluster.replicas {
            for member in try replica.store.members() where member.retired {
                problems.append("\(replica.name) still sees \(member.name) retired at quiescence")
            }
        }

        let summary =
            "\(n) replicas, \(steps) steps, \(counts.writes) writes, \(counts.pushes) pushes, \(counts.pulls) pulls, "
            + "\(counts.prunes) prunes removing \(counts.pruned) transactions and \(counts.dropped) tombstones, "
            + "\(counts.retirements) retirements, "
            + "\(counts.snapshots) snapshot catch-ups, \(model.transactions.count) transactions, quiescent after \(rounds) rounds"
        print("seed=\(seed) \(problems.isEmpty ? "converged" : "FAILED"): \(summary)")
        let file = NSTemporaryDirectory() + "tidemark-prune-convergence-\(seed).txt"
        if !problems.isEmpty || ProcessInfo.processInfo.environment["TIDEMARK_TRACE"] != nil {
            try? (log.lines + ["", "problems:"] + problems).joined(separator: "\n").write(
                toFile: file, atomically: false, encoding: .utf8)
        }
        if !problems.isEmpty {
            Issue.record(
                Comment(
                    rawValue: "seed \(seed): \(problems.count) problems (trace: \(file)):\n"
                        + problems.prefix(30).joined(separator: "\n")))
        }
    }
}

/// Random write transactions for the pruning property: a tiny key space (same-row collisions,
/// deletes against updates, new lives in one transaction) and a UNIQUE column (so merges make
/// conflict-resolution deletes, transactions that arise inside a pull). A transaction writes each
/// column of a row life at most once: writing one column twice in one transaction is a merge
/// matter that ConvergencePropertyTests covers, and would hide what this property is about.
struct CardWorkload {
    static let schema = "CREATE TABLE cards(id TEXT PRIMARY KEY, tag TEXT UNIQUE, title TEXT, rank INTEGER);"
    static let tables = [
        ReferenceModel.Table(name: "cards", columns: ["id", "tag", "title", "rank"], keyColumns: ["id"])
    ]

    let tag: String
    private var counter = 0

    init(tag: String) { self.tag = tag }

    /// One transaction's statements.
    mutating func transaction<G: RandomNumberGenerator>(using rng: inout G) -> [String] {
        counter += 1
        let key = "'k\(Int.random(in: 0..<6, using: &rng))'"
        let title = "'\(tag)-\(counter)'"
        let rank = counter
        let label = Int.random(in: 0..<5, using: &rng) == 0 ? "NULL" : "'t\(Int.random(in: 0..<4, using: &rng))'"
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<30:
            return ["INSERT OR IGNORE INTO cards(id, tag, title, rank) VALUES (\(key), \(label), \(title), \(rank))"]
        case 30..<50: return ["UPDATE cards SET title = \(title) WHERE id = \(key)"]
        case 50..<60: return ["UPDATE cards SET rank = \(rank) WHERE id = \(key)"]
        case 60..<68: return ["UPDATE OR IGNORE cards SET tag = \(label) WHERE id = \(key)"]
        case 68..<76: return ["UPDATE cards SET title = \(title), rank = \(rank) WHERE id = \(key)"]
        case 76..<88: return ["DELETE FROM cards WHERE id = \(key)"]
        case 88..<94:
            // A new life in one transaction: the delete and the insert have different generations.
            return [
                "DELETE FROM cards WHERE id = \(key)",
                "INSERT OR IGNORE INTO cards(id, tag, title, rank) VALUES (\(key), \(label), \(title), \(rank))",
            ]
        default:
            let other = "'k\(Int.random(in: 0..<6, using: &rng))'"
            guard other != key else { return ["UPDATE cards SET rank = \(rank) WHERE id = \(key)"] }
            return [
                "UPDATE cards SET title = \(title) WHERE id = \(key)",
                "UPDATE cards SET rank = \(rank) WHERE id = \(other)",
            ]
        }
    }

    /// A replica's rows as table → key → row.
    static func rows(of replica: TestReplica) throws -> [String: [[SQLValue]: [SQLValue]]] {
        let cards = try #require(try replica.tables()["cards"])
        return ["cards": Dictionary(uniqueKeysWithValues: cards.rows.map { (cards.key(of: $0), $0) })]
    }

    /// Rows sharing a non-null tag.
    static func violations(in rows: [String: [[SQLValue]: [SQLValue]]]) -> [String] {
        var seen: [SQLValue: [SQLValue]] = [:]
        var problems: [String] = []
        for (key, row) in (rows["cards"] ?? [:]).sorted(by: { $0.key.description < $1.key.description })
        where row[1] != .null {
            if let other = seen[row[1]] { problems.append("cards \(key) and \(other) share tag \(row[1])") }
            seen[row[1]] = key
        }
        return problems
    }
}
