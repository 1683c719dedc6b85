import Foundation
import GRDB
import Testing
import Tidemark
import TidemarkTestSupport

/// Export and import end to end: after a round trip the receiving replica holds the sender's rows
/// exactly (row by row, storage class and bits) and the sender's transactions with their metadata.
@Suite struct ExchangeRoundTripTests {
    /// Writes a mix of every storage class and every kind of change through the library, the
    /// library's `execute(sql:)` and the `sqlite3` shell in another process.
    static func writeMix(_ replica: TestReplica) async throws {
        let bigText = String(repeating: "wave 🌊 ", count: 1500)
        _ = try replica.store.write(author: "lib", contextName: "mix") { db in
            let insert = "INSERT INTO items(id, name, qty, price, photo, note) VALUES (?, ?, ?, ?, ?, ?)"
            try db.execute(sql: insert, arguments: ["max", "Max", Int64.max, -0.0, Data([0, 0xff, 0]), nil])
            try db.execute(
                sql: insert, arguments: ["min", "Min", Int64.min, 1e300, Data(), "text in an untyped column"])
            try db.execute(sql: insert, arguments: ["uni", "héllo ✓ 🌊", 0, Double.leastNonzeroMagnitude, nil, 42])
            try db.execute(
                sql: insert,
                arguments: ["big", bigText, nil, Double.infinity, Data((0..<4096).map { UInt8($0 % 251) }), -0.0])
            try db.execute(sql: insert, arguments: ["empty", "", 7, -Double.infinity, nil, Data([0xde, 0xad])])
            try db.execute(
                sql:
                    "INSERT INTO tags VALUES ('uni', 'a', 1), ('uni', 'b', NULL), ('max', 'x', 'w'), ('big', 'y', x'00')"
            )
        }
        _ = try replica.store.execute(
            sql: """
                UPDATE items SET qty = qty - 1, note = NULL WHERE id = 'max';
                UPDATE items SET id = 'min-renamed' WHERE id = 'min';
                DELETE FROM items WHERE id = 'empty';
                INSERT INTO items(id, name, qty) VALUES ('007', '007', '007');
                """, author: "exec")
        try await SQLiteShell.execute(
            replica.path,
            """
            INSERT INTO items(id, name, price) VALUES ('shell', 'from sqlite3', 0.1);
            UPDATE items SET note = 'shell-touched', price = 2 WHERE id = 'uni';
            DELETE FROM tags WHERE tag = 'b';
            UPDATE tags SET weight = weight + 1 WHERE item = 'uni';
            """)
    }

    @Test func aToBCarriesEveryWriteExactly() async throws {
        let directory = try TemporaryDirectory("tidemark-exchange")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        try await Self.writeMix(a)

        let bundle = directory.file("a-to-b.tmb")
        let export = try a.export(to: bundle)
        #expect(export.transactionCount == 3)
        #expect(export.since == .zero)
        #expect(export.through == (try a.store.currentToken()))
        #expect(export.bytes == (try FileManager.default.attributesOfItem(atPath: bundle)[.size] as? Int))

        let summary = try b.store.importBundle(at: bundle)
        #expect(summary.sender == "a")
        #expect(summary.appliedTransactions == 3)
        #expect(summary.appliedChanges == export.changeCount)
        #expect(summary.skippedTransactions == 0)
        #expect(!summary.alreadyApplied)

        try ExchangeExpect.sameTables([a, b])
        // The values really are the unusual ones (a snapshot that lost them would compare equal too).
        let items = try #require(try b.tables()["items"])
        let byID = Dictionary(uniqueKeysWithValues: items.rows.map { ($0[0], $0) })
        #expect(byID[.text("max")]?[2] == .integer(Int64.max - 1))
        // -0.0 survives in an untyped column (SQLite itself stores an integral REAL-affinity value as an integer).
        #expect(byID[.text("big")]?[5] == .real(-0.0))
        #expect(try a.tables()["items"]?.rows.first { $0[0] == .text("big") }?[5] == .real(-0.0))
        #expect(byID[.text("min-renamed")]?[2] == .integer(Int64.min))
        #expect(byID[.text("uni")]?[5] == .text("shell-touched"))
        #expect(byID[.text("007")]?[2] == .integer(7))
        #expect(byID[.text("007")]?[1] == .text("007"))
        #expect(byID[.text("big")]?[3] == .real(.infinity))
        #expect(byID[.text("empty")] == nil && byID[.text("min")] == nil)

        #expect(try b.transactions() == (try a.transactions()))
        #expect(try b.store.currentToken() == (try a.store.currentToken()))
        // The receiver's own history is untouched: everything it holds came from a.
        #expect(try b.store.fetchHistory().allSatisfy { $0.origin == a.id })
    }

    @Test func exportsSinceATokenCarryOnlyWhatTheReceiverLacks() async throws {
        let directory = try TemporaryDirectory("tidemark-exchange")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('one', 'One')")
        _ = try b.store.importBundle(at: try a.export(to: directory.file("1.tmb")).path)

        _ = try a.store.execute(sql: "UPDATE items SET qty = 1 WHERE id = 'one'; INSERT INTO items(id) VALUES ('two')")
        try await SQLiteShell.execute(a.path, "DELETE FROM items WHERE id = 'one'")
        let second = try a.export(since: try b.store.currentToken(), to: directory.file("2.tmb"))
        #expect(second.transactionCount == 2)
        #expect(second.changeCount == 3)
        let summary = try b.store.importBundle(at: second.path)
        #expect(summary.appliedTransactions == 2)
        try ExchangeExpect.sameTables([a, b])
        #expect(try b.transactions() == (try a.transactions()))

        // Nothing new: an empty bundle, which applies nothing (at most b learns a fresher watermark of a).
        let empty = try a.export(since: try b.store.currentToken(), to: directory.file("3.tmb"))
        #expect(empty.transactionCount == 0)
        let before = try b.everything().removing { table, _ in table == "tidemark_watermarks" }
        #expect(try b.store.importBundle(at: empty.path).alreadyApplied)
        let differences = try b.everything().removing { table, _ in table == "tidemark_watermarks" }.differences(
            from: before)
        #expect(differences.isEmpty, "\(differences)")
    }

    /// 20,000 changes in three transactions export to a compact bundle (chunked and compressed; the
    /// one-million-change case is the benchmark's) and import back exactly.
    @Test func aLargeExportStaysCompactAndImportsExactly() throws {
        let directory = try TemporaryDirectory("tidemark-large")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        _ = try a.store.write(author: "bulk") { db in
            let insert = try db.makeStatement(sql: "INSERT INTO items(id, name, qty, price) VALUES (?, ?, ?, ?)")
            for i in 0..<12_000 {
                try insert.execute(arguments: [String(format: "item-%06d", i), "Item number \(i)", i, Double(i) / 4])
            }
        }
        _ = try a.store.execute(
            sql: "UPDATE items SET qty = qty * 2, note = 'doubled' WHERE CAST(substr(id, 6) AS INTEGER) % 3 = 0")
        _ = try a.store.execute(sql: "DELETE FROM items WHERE CAST(substr(id, 6) AS INTEGER) % 3 = 1")

        let started = ContinuousClock.now
        let export = try a.export(to: directory.file("large.tmb"))
        let exported = ContinuousClock.now
        let summary = try b.store.importBundle(at: export.path)
        let imported = ContinuousClock.now
        let perChange = Double(export.bytes) / Double(export.changeCount)
        print(
            "aLargeExportStaysCompactAndImportsExactly: \(export.changeCount) changes, \(export.bytes) bytes, "
                + String(format: "%.2f bytes/change", perChange)
                + "; export \(exported - started), import \(imported - exported)")
        #expect(export.transactionCount == 3)
        #expect(export.changeCount == 20_000)
        #expect(summary.appliedChanges == 20_000)
        // Uncompressed, an insert here is ~60 bytes of record; the chunks compress well.
        #expect(perChange < 20, "bundle is \(perChange) bytes per change")
        #expect(try BundleBytes(contentsOf: export.path).frames(ofType: BundleBytes.transactionsType).count >= 1)
        try ExchangeExpect.sameTables([a, b])
        #expect(try b.tables()["items"]?.rows.count == 8_000)
    }

    /// One transaction whose changes alternate between two tables in runs longer and shorter than
    /// the receiver writes to one statement: its history there holds every change, in order, with
    /// its values and generation.
    @Test func aTransactionOfRunsAcrossTablesIsRecordedInOrder() throws {
        let directory = try TemporaryDirectory("tidemark-runs")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        try b.trust(a)
        _ = try a.store.write(author: "runs") { db in
            for run in 0..<6 {
                for i in 0..<(run % 2 == 0 ? 150 : 3) {
                    let id = "r\(run)-\(i)"
                    try db.execute(sql: "INSERT INTO items(id, name, qty) VALUES (?, ?, ?)", arguments: [id, id, i])
                    try db.execute(sql: "INSERT INTO tags(item, tag, weight) VALUES (?, 't', ?)", arguments: [id, i])
                }
                try db.execute(sql: "UPDATE items SET qty = qty + 1 WHERE id LIKE ?", arguments: ["r\(run)-%"])
                try db.execute(sql: "DELETE FROM tags WHERE item LIKE ?", arguments: ["r\(run)-1%"])
            }
        }
        let export = try a.export(to: directory.file("runs.tmb"))
        #expect(export.transactionCount == 1)
        _ = try b.store.importBundle(at: export.path)
        try ExchangeExpect.sameTables([a, b])
        let transactions = try b.transactions()
        #expect(transactions == (try a.transactions()))
        #expect(transactions.first?.changes.count == export.changeCount)
    }

    /// A → B → C: C only ever imports bundles written by B, yet ends with A's writes; C's writes
    /// reach A through B the same way.
    @Test func relayThroughAThirdReplica() async throws {
        let directory = try TemporaryDirectory("tidemark-relay")
        let a = try TestReplica("a", in: directory)
        let b = try TestReplica("b", in: directory)
        let c = try TestReplica("c", in: directory)
        try TestReplica.trustEachOther([a, b, c])
        try await Self.writeMix(a)

        _ = try b.store.importBundle(at: try a.export(to: directory.file("a-b.tmb")).path)
        _ = try b.store.execute(sql: "INSERT INTO items(id, name) VALUES ('b-1', 'from b')", author: "b")
        let bc = try b.export(since: try c.store.currentToken(), to: directory.file("b-c.tmb"))
        let relayed = try Store.inspectBundle(at: bc.path) { _, _ in }
        #expect(relayed.header.senderName == "b")
        #expect(relayed.sender == b.id)
        #expect(Set(relayed.header.ranges.map(\.origin)) == [a.id, b.id])
        let applied = try c.store.importBundle(at: bc.path)
        #expect(applied.appliedTransactions == 4)
        let cWithoutB = try c.tables().removing { $1.first == .text("b-1") }
        let aDifferences = try a.tables().differences(from: cWithoutB, mine: "a", theirs: "c")
        #expect(aDifferences.isEmpty, "after a → b → c, c lacks a's writes: \(aDifferences)")
        #expect(try c.tables()["items"]?.rows.contains { $0[0] == .text("b-1") } == true)
        #expect(try c.transactions().filter { $0.origin == a.id } == (try a.transactions()))

        _ = try c.store.write(author: "c") { db in
            try db.execute(sql: "INSERT INTO items(id, name, qty) VALUES ('c-1', 'from c', 1)")
            try db.execute(sql: "DELETE FROM items WHERE id = 'b-1'")
        }
        try await SQLiteShell.execute(c.path, "INSERT INTO tags VALUES ('c-1', 'shell', 3)")
        _ = try b.store.importBundle(
            at: try c.export(since: try b.store.currentToken(), to: directory.file("c-b.tmb")).path)
        let ba = try b.export(since: try a.store.currentToken(), to: directory.file("b-a.tmb"))
        let back = try Store.inspectBundle(at: ba.path) { _, _ in }
        #expect(back.sender == b.id)
        #expect(Set(back.header.ranges.map(\.origin)) == [b.id, c.id], "a is not sent its own transactions back")
        _ = try a.store.importBundle(at: ba.path)

        try ExchangeExpect.sameTables([a, b, c], "after c → b → a:")
        let facts = try a.transactions()
        #expect(try b.transactions() == facts)
        #expect(try c.transactions() == facts)
        #expect(Set(facts.map(\.origin)) == [a.id, b.id, c.id])
        #expect(try a.tables()["items"]?.rows.contains { $0[0] == .text("c-1") } == true)
    }

    /// Three replicas write without conflicts (each only inserts rows under its own key prefix and
    /// updates or deletes only its own rows that it holds) through `sync exec`, the library and the
    /// `sqlite3` shell, and push and pull through one folder in a random order until quiescent.
    /// Replay a run with `TIDEMARK_SEED=<seed> swift test --filter threeReplicasConverge`.
    @Test func threeReplicasConvergeThroughOneFolder() async throws {
        let directory = try TemporaryDirectory("tidemark-converge")
        let exchange = directory.file("exchange")
        try FileManager.default.createDirectory(atPath: exchange, withIntermediateDirectories: true)
        _ = try await Self.convergeThree(
            through: exchange, in: directory, label: "threeReplicasConvergeThroughOneFolder")
    }

    /// The randomized workload of `threeReplicasConvergeThroughOneFolder` through the exchange
    /// folder `exchange` (a path or a URL, reached with `settings`, or with `options` and
    /// `environment` by `sync`); returns the replicas, converged.
    static func convergeThree(
        through exchange: String, in directory: TemporaryDirectory, label: String,
        settings: ExchangeSettings = ExchangeSettings(), options: [String] = [], environment: [String: String] = [:]
    ) async throws -> [TestReplica] {
        let seed = SeededGenerator.seed()
        print("\(label): seed \(seed) (replay with TIDEMARK_SEED=\(seed))")
        var random = SeededGenerator(seed: seed)
        let replicas = try ["a", "b", "c"].map { try TestReplica($0, in: directory) }
        try TestReplica.trustEachOther(replicas)
        var counters = [0, 0, 0]
        var log: [String] = []

        func step(_ index: Int, _ random: inout SeededGenerator) async throws {
            let replica = replicas[index]
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                let sql = try Self.randomWrite(by: replica, counter: &counters[index], using: &random)
                let channel = Int.random(in: 0..<3, using: &random)
                log.append("\(replica.name) write via \(["sync exec", "library", "sqlite3"][channel]): \(sql)")
                switch channel {
                case 0:
                    let result = try await SyncProcess.run([
                        "exec", "--store", replica.path, "--author", replica.name, sql,
                    ])
                    try #require(result.exitCode == 0 && result.stderr.isEmpty, "seed \(seed): \(result)")
                case 1: _ = try replica.store.execute(sql: sql, author: replica.name, contextName: "library")
                default: try await SQLiteShell.execute(replica.path, sql)
                }
            case 5..<7:
                if Bool.random(using: &random) {
                    log.append("\(replica.name) push (library)")
                    _ = try replica.store.push(to: exchange, key: replica.key, settings: settings)
                } else {
                    log.append("\(replica.name) push (sync push)")
                    let result = try await SyncProcess.run(
                        ["push", "--store", replica.path, "--to", exchange] + options, environment: environment)
                    try #require(result.exitCode == 0 && result.stderr.isEmpty, "seed \(seed): \(result)")
                }
            default:
                if Bool.random(using: &random) {
                    log.append("\(replica.name) pull (library)")
                    let pulled = try replica.store.pull(from: exchange, key: replica.key, settings: settings)
                    #expect(pulled.warnings.isEmpty, "seed \(seed): \(pulled.warnings)")
                } else {
                    log.append("\(replica.name) pull (sync pull)")
                    let result = try await SyncProcess.run(
                        ["pull", "--store", replica.path, "--from", exchange] + options, environment: environment)
                    try #require(result.exitCode == 0 && result.stderr.isEmpty, "seed \(seed): \(result)")
                }
            }
        }

        var rounds = 0
        do {
            for _ in 0..<80 { try await step(Int.random(in: 0..<3, using: &random), &random) }

            // Quiesce: rounds of push-then-pull by everyone until a round moves nothing.
            while true {
                rounds += 1
                var moved = false
                for replica in replicas {
                    log.append("\(replica.name) push (library, quiescing)")
                    if try replica.store.push(to: exchange, key: replica.key, settings: settings).path != nil {
                        moved = true
                    }
                    log.append("\(replica.name) pull (library, quiescing)")
                    let pulled = try replica.store.pull(from: exchange, key: replica.key, settings: settings)
                    #expect(pulled.warnings.isEmpty, "seed \(seed): \(pulled.warnings)")
                    if !pulled.imported.isEmpty { moved = true }
                }
                if !moved { break }
                try #require(
                    rounds < 6, "seed \(seed): not quiescent after \(rounds) rounds\n\(log.joined(separator: "\n"))")
            }
        } catch {
            print(
                "seed \(seed): failed after these operations (the last one threw \(error)):\n\(log.joined(separator: "\n"))"
            )
            for replica in replicas {
                let state = try? replica.everything()["tidemark_replicas"]
                print(
                    "\(replica.name) (\(replica.id.short)) tidemark_replicas \(state?.columns ?? []):\n  "
                        + (state?.rows ?? []).map { "\($0)" }.joined(separator: "\n  "))
            }
            throw error
        }
        print("\(label): quiescent after \(rounds) final rounds; \(counters.reduce(0, +)) rows inserted")

        let context = "seed \(seed):"
        try ExchangeExpect.sameTables(replicas, context)
        let token = try replicas[0].store.currentToken()
        for replica in replicas.dropFirst() {
            #expect(try replica.store.currentToken() == token, "\(context) \(replica.name)")
        }
        // Every replica's writes arrived everywhere (a writer's first transaction gives its token an entry).
        for (replica, count) in zip(replicas, counters) where count > 0 {
            #expect(token[replica.id] > 0, "\(context) \(replica.name)'s writes are missing")
        }
        // Pulls prune history every member holds, so replicas keep different parts of it; where two
        // keep the same transaction, it is the same.
        var seen: [String: TransactionFacts] = [:]
        for replica in replicas {
            for fact in try replica.transactions() {
                let key = "\(fact.origin) #\(fact.sequence)"
                if let other = seen[key] {
                    #expect(other == fact, "\(context) \(key) differs at \(replica.name)")
                } else {
                    seen[key] = fact
                }
            }
        }
        let first = try replicas[0].tables()
        if try replicas.dropFirst().contains(where: { try $0.tables() != first }) {
            print("\(context) operations:\n\(log.joined(separator: "\n"))")
        }
        return replicas
    }

    /// One random non-conflicting SQL write by `replica`: insert a row under its own prefix, or
    /// update or delete one of its own rows it holds, or tag one of them.
    static func randomWrite(by replica: TestReplica, counter: inout Int, using random: inout SeededGenerator) throws
        -> String
    {
        let prefix = replica.name + "-"
        let tables = try replica.tables()
        let own = (tables["items"]?.rows ?? []).compactMap { row -> String? in
            guard case .text(let id) = row[0], id.hasPrefix(prefix) else { return nil }
            return id
        }
        let ownTags = (tables["tags"]?.rows ?? []).filter {
            if case .text(let item) = $0[0] { return item.hasPrefix(prefix) } else { return false }
        }
        func value(_ random: inout SeededGenerator) -> String {
            switch Int.random(in: 0..<5, using: &random) {
            case 0: return "NULL"
            case 1: return String(Int64.random(in: -1_000_000...1_000_000, using: &random))
            case 2: return String(Double(Int.random(in: -1000...1000, using: &random)) / 8)
            case 3: return "'t\(Int.random(in: 0..<1000, using: &random))'''"
            default:
                return "x'"
                    + (0..<Int.random(in: 0...4, using: &random)).map { _ in
                        String(format: "%02x", Int.random(in: 0...255, using: &random))
                    }.joined() + "'"
            }
        }
        let choice = own.isEmpty ? 0 : Int.random(in: 0..<6, using: &random)
        switch choice {
        case 0, 1:
            counter += 1
            let id = "\(prefix)\(counter)"
            return
                "INSERT INTO items(id, name, qty, price, photo, note) VALUES ('\(id)', \(value(&random)), \(value(&random)), \(value(&random)), \(value(&random)), \(value(&random)))"
        case 2:
            let id = own.randomElement(using: &random)!
            let column = ["name", "qty", "price", "photo", "note"].randomElement(using: &random)!
            return "UPDATE items SET \(column) = \(value(&random)), note = \(value(&random)) WHERE id = '\(id)'"
        case 3:
            let id = own.randomElement(using: &random)!
            return "DELETE FROM items WHERE id = '\(id)'; DELETE FROM tags WHERE item = '\(id)'"
        case 4:
            let id = own.randomElement(using: &random)!
            return
                "INSERT OR REPLACE INTO tags VALUES ('\(id)', 'tag\(Int.random(in: 0..<3, using: &random))', \(value(&random)))"
        default:
            guard let tag = ownTags.randomElement(using: &random) else {
                let id = own.randomElement(using: &random)!
                return "UPDATE items SET qty = coalesce(qty, 0) + 1 WHERE id = '\(id)'"
            }
            return "DELETE FROM tags WHERE item = \(tag[0]) AND tag = \(tag[1])"
        }
    }
}
