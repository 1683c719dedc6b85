import Foundation
import GRDB
import ReferenceModel
import Testing
import Tidemark
import TidemarkTestSupport

/// Protocol/merge.md as a property: replicas that receive the same transactions — in random order,
/// by random routes, with duplicates and replays — hold the same rows, and those rows are what the
/// reference model computes from the set of transactions alone. Each replica makes the workload's
/// migrations (a column and a table renamed, columns added) at moments of its own, and writes with
/// the schema it has: the model reads every transaction through the versions made since.
///
/// Each case prints its seed; `TIDEMARK_SEED=<seed> swift test --filter Convergence` replays it.
@Suite struct ConvergencePropertyTests {
    /// Cases per run; each takes a few seconds.
    static let cases = 10
    /// This run's seeds derive from one base seed.
    static let base = SeededGenerator.seed(environment: "TIDEMARK_BASE_SEED")
    /// A seed to replay instead of random cases.
    static var replay: UInt64? {
        ProcessInfo.processInfo.environment["TIDEMARK_SEED"] == nil ? nil : SeededGenerator.seed()
    }

    @Test("random histories converge to the reference model", arguments: 0..<cases)
    func randomHistories(index: Int) async throws {
        if let seed = Self.replay {
            if index == 0 { try await ConvergenceScenario(seed: seed).run() }
            return
        }
        var seeds = SeededGenerator(seed: Self.base)
        for _ in 0..<index { _ = seeds.next() }
        try await ConvergenceScenario(seed: seeds.next()).run()
    }
}

/// One random run: replicas, writes, deliveries, then quiescence and every check.
struct ConvergenceScenario {
    let seed: UInt64
    /// Overrides for shrinking a failure by hand: replica count, steps.
    var replicas: Int?
    var steps: Int?
    /// Whether replicas migrate. Migration moments and writes to added columns come from a stream
    /// of their own, so a seed's writes and exchanges are the same either way.
    var migrations: Bool

    init(seed: UInt64, replicas: Int? = nil, steps: Int? = nil, migrations: Bool = true) {
        self.seed = seed
        self.replicas = replicas
        self.steps = steps
        self.migrations = migrations
    }

    func run() async throws {
        print("seed=\(seed) (replay: TIDEMARK_SEED=\(seed) swift test --filter Convergence)")
        var rng = SeededGenerator(seed: seed)
        let n = replicas ?? Int.random(in: 2...8, using: &rng)
        let chain = n >= 3 && Int.random(in: 0..<3, using: &rng) == 0
        let keySeeds = (0..<n).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        let skews = (0..<n).map { _ in Int64.random(in: -15...15, using: &rng) }
        let cluster = try ConvergenceCluster(schema: RandomWorkload.schema, keySeeds: keySeeds, skews: skews)
        // A chain (r0 – r1 – r2 …) forces relays: r2 hears r0 only through r1.
        let edges: [(Int, Int)] =
            chain
            ? (0..<n - 1).flatMap { [($0, $0 + 1), ($0 + 1, $0)] }
            : (0..<n).flatMap { a in (0..<n).filter { $0 != a }.map { (a, $0) } }
        var trace = Trace(seed: seed, replicas: n, chain: chain)
        var workloads = (0..<n).map { RandomWorkload(space: .tiny, tag: "r\($0)") }
        var held = [[History.Token]](repeating: [.zero], count: n)
        var rounds = 0
        var evolution = SeededGenerator(seed: seed ^ 0x5C4E_3A00_0000_0011)
        var levels = [Int](repeating: 0, count: n)
        let versions = migrations ? RandomWorkload.migrations.count : 0
        /// The step at which each replica makes each migration; past the end, at quiescence.
        let moments = (0..<n).map { _ in (0..<versions).map { _ in Int.random(in: 0..<500, using: &evolution) }.sorted()
        }

        var migratedDuringRun = 0

        func migrate(_ r: Int) throws {
            let summary = try cluster.replicas[r].store.migrate(
                Store.Migration(sql: RandomWorkload.migrations[levels[r]]))
            levels[r] += 1
            trace.add("migrate r\(r) to \(summary.version.map(String.init(describing:)) ?? "?")")
        }

        func deliver(_ sender: Int, _ receiver: Int, since: History.Token, label: String) throws {
            let (_, summary) = try cluster.exchange(from: sender, to: receiver, since: since)
            trace.add(
                "\(label) r\(sender)→r\(receiver) \(cluster.bundles.last!.name): applied \(summary.appliedTransactions)"
            )
            held[receiver].append(try cluster.replicas[receiver].store.currentToken())
        }

        /// The random steps, then gossip until quiescent.
        func play(steps: Int) async throws {
            for step in 0..<steps {
                for r in 0..<n where levels[r] < versions && moments[r][levels[r]] <= step {
                    try migrate(r)
                    migratedDuringRun += 1
                }
                cluster.time.advance(by: Int64.random(in: 0...2, using: &rng))
                switch Int.random(in: 0..<100, using: &rng) {
                case 0..<55:
                    let r = Int.random(in: 0..<n, using: &rng)
                    var statements = RandomWorkload.adapt(workloads[r].transaction(using: &rng), level: levels[r])
                    if levels[r] > 0 && Int.random(in: 0..<6, using: &evolution) == 0 {
                        statements.append(workloads[r].moodUpdate(level: levels[r], using: &evolution))
                    }
                    try await write(
                        statements, on: cluster.replicas[r], path: Int.random(in: 0..<10, using: &rng), trace: &trace)
                case 55..<75:
                    let (sender, receiver) = edges.randomElement(using: &rng)!
                    let roll = Int.random(in: 0..<100, using: &rng)
                    let since =
                        roll < 60
                        ? try cluster.replicas[receiver].store.currentToken()
                        : roll < 85 ? held[receiver].randomElement(using: &rng)! : .zero
                    try deliver(
                        sender, receiver, since: since,
                        label: roll < 60 ? "exchange" : roll < 85 ? "exchange(old token)" : "exchange(zero)")
                    if Int.random(in: 0..<6, using: &rng) == 0 {
                        let again = try cluster.replicas[receiver].store.importBundle(at: cluster.bundles.last!.file)
                        #expect(
                            again.alreadyApplied,
                            "importing the same bundle twice applied \(again.appliedTransactions) transactions")
                        trace.add("  duplicate import into r\(receiver)")
                    }
                case 75..<83:
                    guard let bundle = cluster.bundles.randomElement(using: &rng) else { continue }
                    // Replays stay on the topology's edges: into one of the sender's neighbours.
                    let receiver = edges.filter { $0.0 == bundle.sender }.map(\.1).randomElement(using: &rng)!
                    switch try cluster.replay(bundle.file, into: receiver) {
                    case .success(let summary):
                        trace.add("replay \(bundle.name) into r\(receiver): applied \(summary.appliedTransactions)")
                    case .failure(.missingPrerequisites(let missing)):
                        trace.add("replay \(bundle.name) into r\(receiver): refused, missing \(missing)")
                    }
                case 83..<90:
                    // A gossip round interrupted at a random point.
                    let order = edges.shuffled(using: &rng)
                    let stop = Int.random(in: 0...order.count, using: &rng)
                    for (sender, receiver) in order.prefix(stop) {
                        try deliver(
                            sender, receiver, since: try cluster.replicas[receiver].store.currentToken(),
                            label: "partial round")
                    }
                default:
                    guard !chain else { continue }
                    for r in 0..<n where Bool.random(using: &rng) {
                        try cluster.push(r)
                        trace.add("push r\(r)")
                    }
                    for r in 0..<n where Bool.random(using: &rng) {
                        let warnings = try cluster.pull(r)
                        trace.add("pull r\(r)")
                        #expect(warnings.isEmpty, "pull into r\(r) warned: \(warnings)")
                    }
                }
            }

            // Replicas still behind make the rest of the migrations now, at their own pace.
            for r in (0..<n).shuffled(using: &evolution) { while levels[r] < versions { try migrate(r) } }
            rounds = try cluster.quiesce(edges: edges.shuffled(using: &rng))
            trace.add("quiescent after \(rounds) gossip rounds")
        }

        let steps = self.steps ?? Int.random(in: 200...400, using: &rng)
        do {
            try await play(steps: steps)
        } catch {
            Issue.record(error, "seed \(seed) (trace: \(trace.save()))")
            return
        }
        let (problems, summary) = try ConvergenceChecks(cluster: cluster, migrated: versions > 0).run()
        print(
            "seed=\(seed) \(problems.isEmpty ? "converged" : "FAILED"): \(n) replicas (\(chain ? "chain" : "mesh")), \(steps) steps, "
                + "\(cluster.exported.count) bundles, quiescent after \(rounds) rounds, \(migratedDuringRun) of \(n * versions) migrations "
                + "during the run; \(summary)")
        if !problems.isEmpty {
            let file = trace.save()
            let report =
                "seed \(seed): \(problems.count) problems (trace: \(file)):\n"
                + problems.prefix(40).joined(separator: "\n")
            Issue.record(Comment(rawValue: report))
        }
    }

    /// Writes one transaction: through `execute(sql:)`, through `write` with GRDB, or (a fifth of the
    /// time) through the `sqlite3` shell in another process, as a foreign client.
    func write(_ statements: [String], on replica: TestReplica, path: Int, trace: inout Trace) async throws {
        switch path {
        case 0..<5:
            _ = try replica.store.execute(
                sql: statements.joined(separator: ";\n"), author: "app", contextName: "execute")
            trace.add("execute on \(replica.name): \(statements.joined(separator: "; "))")
        case 5..<8:
            _ = try replica.store.write(author: "app", contextName: "write") { db in
                for statement in statements { try db.execute(sql: statement) }
            }
            trace.add("write on \(replica.name): \(statements.joined(separator: "; "))")
        default:
            try await SQLiteShell.execute(replica.path, "BEGIN;\n" + statements.map { $0 + ";\n" }.joined() + "COMMIT;")
            trace.add("sqlite3 on \(replica.name): \(statements.joined(separator: "; "))")
        }
    }
}

/// What happened in a run, written to a file when it fails.
struct Trace {
    var lines: [String]
    let seed: UInt64

    init(seed: UInt64, replicas: Int, chain: Bool) {
        self.seed = seed
        lines = ["seed \(seed): \(replicas) replicas, \(chain ? "chain" : "mesh")"]
    }

    mutating func add(_ line: String) { lines.append(line) }

    func save() -> String {
        let path = NSTemporaryDirectory() + "tidemark-convergence-\(seed).txt"
        try? lines.joined(separator: "\n").write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }
}

/// The checks at quiescence; each returns what it found wrong.
struct ConvergenceChecks {
    let cluster: ConvergenceCluster
    /// Whether every replica made the workload's migrations.
    var migrated = false

    var tables: [ReferenceModel.Table] { migrated ? RandomWorkload.migratedTables : RandomWorkload.tables }
    var posts: String { migrated ? "notes" : "posts" }

    func run() throws -> (problems: [String], summary: String) {
        // Exports fold every local change, so every change in history has its generation.
        for replica in cluster.replicas {
            try replica.export(
                since: try replica.store.currentToken(), to: cluster.directory.file("fold-\(replica.name).tmb"))
        }
        var problems: [String] = []
        var model =
            migrated
            ? ReferenceModel(tables: tables, renames: RandomWorkload.renames, defaults: RandomWorkload.addedDefaults)
            : ReferenceModel(tables: tables)
        var histories: [[History.Transaction]] = []
        for replica in cluster.replicas {
            let history = try replica.store.fetchHistory()
            histories.append(history)
            model.add(history)
        }
        for (replica, history) in zip(cluster.replicas, histories) where history.count != model.transactions.count {
            problems.append("\(replica.name) holds \(history.count) transactions of \(model.transactions.count)")
        }
        problems += model.mismatches.map { "transaction \($0) differs between replicas" }
        problems += model.unfolded.map { "transaction \($0.0) carries an unfolded change of \($0.1.compact)" }

        let expected = model.rows()
        let states = try cluster.replicas.map { try Self.rows(of: $0, tables: tables) }
        for (replica, actual) in zip(cluster.replicas, states) {
            problems += Self.differences(actual, expected, model: model).map { "\(replica.name) vs model: \($0)" }
            problems += WorkloadConstraints.violations(in: actual, posts: posts).map { "\(replica.name): \($0)" }
        }
        let first = try cluster.replicas[0].tables()
        for replica in cluster.replicas.dropFirst() {
            problems += try replica.tables().differences(from: first, mine: replica.name, theirs: "r0")
        }
        problems += WorkloadConstraints.violations(in: expected, posts: posts).map { "model: \($0)" }
        problems += lostWrites(model, states) + resurrections(model, states)
        problems += try digestProblems()
        var listed: [Replica.ID: [Store.Conflict]] = [:]
        for replica in cluster.replicas { listed[replica.id] = try replica.store.conflicts() }
        problems += unlistedResolutions(model, listed)
        var kinds: [String: Int] = [:]
        for conflict in listed.values.joined() where conflict.kind != "remote" { kinds[conflict.kind, default: 0] += 1 }
        let rows = expected.keys.sorted().map { "\(expected[$0]!.count) \($0)" }.joined(separator: ", ")
        let summary =
            "\(model.transactions.count) transactions, \(model.resolutions().count) resolution deletes, "
            + "(\(kinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))), "
            + "\(model.deletedRows().count) rows deleted, \(rows) live"
        return (problems, summary)
    }

    /// No lost update: every write nothing supersedes is visible on every replica.
    func lostWrites(_ model: ReferenceModel, _ states: [[String: [[SQLValue]: [SQLValue]]]]) -> [String] {
        var problems: [String] = []
        for survivor in model.survivors() {
            let index = model.tables[survivor.row.table]!.columns.firstIndex(of: survivor.column)!
            for (replica, state) in zip(cluster.replicas, states) {
                let value = state[survivor.row.table]?[survivor.row.key]?[index]
                if value != survivor.value {
                    problems.append(
                        "lost write: \(survivor.row.compact).\(survivor.column) = \(survivor.value) by \(survivor.write.transaction) "
                            + "(generation \(survivor.write.generation)) reads \(value.map(\.description) ?? "no row") on \(replica.name)"
                    )
                }
            }
        }
        return problems
    }

    /// No resurrection: a row whose greatest generation is even is absent everywhere.
    func resurrections(_ model: ReferenceModel, _ states: [[String: [[SQLValue]: [SQLValue]]]]) -> [String] {
        model.deletedRows().flatMap { row in
            zip(cluster.replicas, states).compactMap { replica, state in
                state[row.table]?[row.key] == nil
                    ? nil : "resurrected: \(row.compact) is deleted but present on \(replica.name)"
            }
        }
    }

    /// Every conflict-resolution delete is listed in `conflicts()` of the replica that made it.
    func unlistedResolutions(_ model: ReferenceModel, _ listed: [Replica.ID: [Store.Conflict]]) -> [String] {
        model.resolutions().compactMap { resolver, row, generation in
            let found = (listed[resolver] ?? []).contains { conflict in
                conflict.table == row.table && conflict.generation == generation && conflict.resolvedBy == resolver
                    && conflict.kind != "remote" && Self.keyValues(conflict.key) == row.key
            }
            return found
                ? nil
                : "resolution delete of \(row.compact) (generation \(generation)) by \(resolver.short) is not in its conflicts()"
        }
    }

    /// A conflict's key JSON (`{"id":"u1"}`) as the key's values, for the one-text-column keys here.
    static func keyValues(_ json: String) -> [SQLValue]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let id = object["id"] as? String
        else { return nil }
        return [.text(id)]
    }

    /// A replica's tracked tables as table → key → row.
    static func rows(of replica: TestReplica, tables: [ReferenceModel.Table] = RandomWorkload.tables) throws -> [String:
        [[SQLValue]: [SQLValue]]]
    {
        var result: [String: [[SQLValue]: [SQLValue]]] = [:]
        let snapshot = try replica.tables()
        for shape in tables {
            guard let table = snapshot[shape.name], table.columns == shape.columns else {
                throw MissingTable(description: "\(replica.name) lacks table \(shape.name)(\(shape.columns))")
            }
            result[table.name] = Dictionary(uniqueKeysWithValues: table.rows.map { (table.key(of: $0), $0) })
        }
        return result
    }

    struct MissingTable: Error, CustomStringConvertible {
        var description: String
    }

    /// Row-by-row differences, by key; a differing column that one transaction wrote twice is named.
    static func differences(
        _ actual: [String: [[SQLValue]: [SQLValue]]], _ expected: [String: [[SQLValue]: [SQLValue]]],
        model: ReferenceModel? = nil
    ) -> [String] {
        var lines: [String] = []
        for table in Set(actual.keys).union(expected.keys).sorted() {
            let mine = actual[table] ?? [:]
            let theirs = expected[table] ?? [:]
            let columns = model?.tables[table]?.columns ?? []
            for key in Set(mine.keys).union(theirs.keys).sorted(by: { $0.description < $1.description }) {
                switch (mine[key], theirs[key]) {
                case (let a?, let b?) where a != b:
                    let twice = columns.indices.filter {
                        a[$0] != b[$0]
                            && model?.winnerSharesClock(ReferenceModel.RowID(table: table, key: key), columns[$0])
                                == true
                    }
                    let note =
                        twice.isEmpty
                        ? ""
                        : " [\(twice.map { columns[$0] }.joined(separator: ", ")) written twice by one transaction]"
                    lines.append("\(table) \(key): \(a) but the model has \(b)\(note)")
                case (let a?, nil): lines.append("\(table) \(key): \(a) present, the model has it deleted")
                case (nil, let b?): lines.append("\(table) \(key): absent, the model has \(b)")
                default: break
                }
            }
        }
        return lines
    }
}
