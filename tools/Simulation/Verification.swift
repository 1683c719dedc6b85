import Foundation
import ReferenceModel
import Tidemark

/// The checks at quiescence: every replica's rows hash alike and equal the reference model's.
struct Verification {
    struct Report {
        var problems: [String] = []
        var transactions = 0
        var changes = 0
        var resolutions = 0
        var resolvedLives = 0
        var resolutionKinds: [String: Int] = [:]
        var survivors = 0
        var deletedRows = 0
        var rows: [String: Int] = [:]
        var modelHash: UInt64 = 0
        var replicaHashes: Set<UInt64> = []
        var equalReplicas = 0
        /// Cells (replica, row, column) that differ from the model, and how many of them hold a
        /// column one transaction wrote twice.
        var divergentCells = 0
        var sameTransactionCells = 0
        var divergentRows: Set<ReferenceModel.RowID> = []
    }

    let cluster: SimCluster

    /// Long by design: a verification run read top to bottom: set up, the seeds, the checks and the report.
    func run() throws -> Report {
        var report = Report()
        // Exports fold every local change, so history carries every generation.
        for (i, store) in cluster.stores.enumerated() {
            _ = try store.exportBundle(
                since: try store.currentToken(), to: cluster.directory + "/fold.tmb", key: cluster.keys[i])
        }
        // Equal tokens mean equal sets of transactions (verified chains): one history is the set.
        var model = ReferenceModel(tables: RandomWorkload.tables)
        model.add(try cluster.stores[0].fetchHistory())
        report.transactions = model.transactions.count
        report.changes = model.writes.values.map(\.count).reduce(0, +)
        report.problems += model.unfolded.prefix(5).map { "unfolded change of \($0.1.compact) in \($0.0)" }

        let expected = model.rows()
        report.modelHash = Self.hash(expected)
        report.rows = expected.mapValues(\.count)
        report.problems += WorkloadConstraints.violations(in: expected).prefix(10).map { "model: \($0)" }
        var first: [String: [[SQLValue]: [SQLValue]]]?
        for i in cluster.stores.indices {
            let rows = try cluster.rows(of: i)
            let hash = Self.hash(rows)
            report.replicaHashes.insert(hash)
            if hash == report.modelHash {
                report.equalReplicas += 1
            } else {
                for difference in Self.differences(rows, expected, model: model) {
                    report.problems.append("r\(i) vs model: \(difference.text)")
                    report.divergentRows.insert(difference.row)
                    report.divergentCells += difference.cells
                    report.sameTransactionCells += difference.sameTransactionCells
                }
            }
            if first == nil { first = rows }
        }
        // The guarantees stated directly, on one replica (the others hash alike).
        if let rows = first {
            let survivors = model.survivors()
            report.survivors = survivors.count
            for survivor in survivors {
                let index = model.tables[survivor.row.table]!.columns.firstIndex(of: survivor.column)!
                if rows[survivor.row.table]?[survivor.row.key]?[index] != survivor.value {
                    report.problems.append(
                        "lost write: \(survivor.row.compact).\(survivor.column) = \(survivor.value) by \(survivor.write.transaction)"
                    )
                }
            }
            let deleted = model.deletedRows()
            report.deletedRows = deleted.count
            for row in deleted where rows[row.table]?[row.key] != nil {
                report.problems.append("resurrected: \(row.compact)")
            }
        }
        // Every resolution delete is listed by the replica that made it.
        var listed: [Replica.ID: Set<String>] = [:]
        for store in cluster.stores {
            let own = try store.conflicts().filter { $0.kind != "remote" }
            for conflict in own { report.resolutionKinds[conflict.kind, default: 0] += 1 }
            listed[store.replica.id] = Set(own.map { "\($0.table) \($0.key) \($0.generation)" })
        }
        let resolutions = model.resolutions()
        report.resolutions = resolutions.count
        report.resolvedLives = Set(resolutions.map { "\($0.row) \($0.generation)" }).count
        for (resolver, row, generation) in resolutions {
            guard case .text(let id) = row.key[0] else { continue }
            let key = "\(row.table) {\"id\":\"\(id)\"} \(generation)"
            if listed[resolver]?.contains(key) != true {
                report.problems.append(
                    "resolution of \(row.compact) generation \(generation) by \(resolver.short) not in its conflicts()")
            }
        }
        return report
    }

    /// FNV-1a over every row's canonical encoding, tables by name, rows by canonical key bytes.
    static func hash(_ rows: [String: [[SQLValue]: [SQLValue]]]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for table in rows.keys.sorted() {
            for byte in table.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            let ordered = rows[table]!.map { (KeyOrder.bytes($0.key), $0.value) }.sorted {
                $0.0.lexicographicallyPrecedes($1.0)
            }
            for (_, row) in ordered {
                for byte in KeyOrder.bytes(row) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            }
        }
        return hash
    }

    /// One row that differs from the model.
    struct Difference {
        var row: ReferenceModel.RowID
        var text: String
        var cells: Int
        var sameTransactionCells: Int
    }

    static func differences(
        _ actual: [String: [[SQLValue]: [SQLValue]]], _ expected: [String: [[SQLValue]: [SQLValue]]],
        model: ReferenceModel
    ) -> [Difference] {
        var result: [Difference] = []
        for table in expected.keys.sorted() {
            let shape = model.tables[table]!
            let mine = actual[table] ?? [:]
            let theirs = expected[table]!
            for key in Set(mine.keys).union(theirs.keys).sorted(by: { $0.description < $1.description })
            where mine[key] != theirs[key] {
                let row = ReferenceModel.RowID(table: table, key: key)
                let text =
                    "\(table) \(key): \(mine[key]?.description ?? "absent") but the model has \(theirs[key]?.description ?? "absent")"
                guard let a = mine[key], let b = theirs[key] else {
                    result.append(Difference(row: row, text: text, cells: 1, sameTransactionCells: 0))
                    continue
                }
                let columns = shape.columns.indices.filter { a[$0] != b[$0] }.map { shape.columns[$0] }
                let shared = columns.filter { model.winnerSharesClock(row, $0) }
                let note = shared.isEmpty ? "" : " [\(shared.joined(separator: ", ")) written twice by one transaction]"
                result.append(
                    Difference(row: row, text: text + note, cells: columns.count, sameTransactionCells: shared.count))
            }
        }
        return result
    }
}

/// The one-screen report.
struct Summary {
    let seed: UInt64
    let replicas: Int
    let operations: Int
    let committed: Int
    let writeTime: TimeInterval
    let gossipTime: TimeInterval
    let checkTime: TimeInterval
    let rounds: Int
    let roundLog: [String]
    let cluster: SimCluster
    let report: Verification.Report

    var text: String {
        let writes = cluster.statistics(.writes)
        let gossip = cluster.statistics(.gossip)
        func mb(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        func s(_ t: TimeInterval) -> String { String(format: "%.1f s", t) }
        var lines = [
            "── tidemark-sim ─────────────────────────────────────────────",
            "seed \(seed): \(replicas) replicas, \(operations) operations (\(committed) committed a transaction, \(operations - committed) changed nothing)",
            "write phase      \(s(writeTime)); \(writes.bundles) pairwise bundles, \(mb(writes.bytes)), \(writes.transactions) transactions applied",
            "                 export \(s(writes.exportTime)), import \(s(writes.importTime))",
            "converge         \(rounds) all-pairs rounds, \(s(gossipTime)) after the last write",
            "                 \(gossip.bundles) bundles, \(mb(gossip.bytes)), \(gossip.transactions) transactions / \(gossip.changes) changes applied",
            "                 export \(s(gossip.exportTime)), import \(s(gossip.importTime))",
        ]
        lines += roundLog.map { "                   " + $0 }
        lines += [
            "total exchanged  \(writes.bundles + gossip.bundles) bundles, \(mb(writes.bytes + gossip.bytes))",
            "history          \(report.transactions) transactions, \(report.changes) changes",
            "resolutions      \(report.resolutions) system deletes ("
                + report.resolutionKinds.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(
                    separator: ", ")
                + ") ending \(report.resolvedLives) row lives",
            "final rows       "
                + report.rows.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                + "; \(report.deletedRows) identities deleted",
            "replicas equal   \(report.replicaHashes.count == 1 ? "yes" : "NO") (\(report.replicaHashes.count) distinct hashes: "
                + report.replicaHashes.sorted().map { String($0, radix: 16) }.joined(separator: ", ") + ")",
            "model            \(report.equalReplicas)/\(replicas) replicas equal the reference model (hash \(String(report.modelHash, radix: 16)))",
            "guarantees       \(report.survivors) unsuperseded writes checked; checks took \(s(checkTime))",
            report.divergentCells == 0
                ? "divergence       none"
                : "divergence       \(report.divergentCells) cells in \(report.divergentRows.count) rows differ from the model; "
                    + "\(report.sameTransactionCells) of them hold a column one transaction wrote twice",
            report.problems.isEmpty
                ? "result           PASS" : "result           FAIL: \(report.problems.count) problems",
        ]
        lines += report.problems.prefix(8).map { "  " + $0 }
        if report.problems.count > 8 { lines.append("  … \(report.problems.count - 8) more on standard error") }
        return lines.joined(separator: "\n")
    }
}
