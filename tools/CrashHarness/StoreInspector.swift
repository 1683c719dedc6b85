import Foundation
import GRDB
import Tidemark

/// Checks of one store made while no `sync` process runs: SQLite's own integrity check, the rows
/// each tag has, and the shape of the history the store keeps.
enum StoreInspector {
    /// `PRAGMA integrity_check`: nil when SQLite answers `ok`, else what it said.
    static func integrityProblem(of path: String) -> String? {
        do {
            let database = try DatabaseQueue(path: path)
            let lines = try database.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            try database.close()
            return lines == ["ok"] ? nil : "integrity_check: " + lines.joined(separator: "; ")
        } catch {
            return "integrity_check could not run: \(error)"
        }
    }

    /// How many rows of `items` each tag has.
    static func tagCounts(of path: String) throws -> [String: Int] {
        let database = try DatabaseQueue(path: path)
        defer { try? database.close() }
        return try database.read { db in
            var counts: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT tag, count(*) FROM items GROUP BY tag") {
                counts[row[0]] = row[1]
            }
            return counts
        }
    }

    /// Every row of `items`, one `id|tag|n|payload` line each, in key order: replicas that
    /// converged return the same lines.
    static func rows(of path: String) throws -> [String] {
        let database = try DatabaseQueue(path: path)
        defer { try? database.close() }
        return try database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, tag, n, payload FROM items ORDER BY id").map { row in
                "\(row[0] as String)|\(row[1] as String)|\(row[2] as Int64)|\(row[3] as String)"
            }
        }
    }

    /// What the store's history says, read through the public history API.
    struct HistoryFacts {
        /// Ways the history breaks the rules (empty when it is sound).
        var problems: [String] = []
        /// How many history transactions insert rows of each tag.
        var transactionsPerTag: [String: Int] = [:]
    }

    /// Checks that, for every origin, the sequence numbers the store holds are unique and run
    /// without a gap from just past its pruned point to its token, in increasing order; and that
    /// each tag's rows were inserted by one transaction, holding all of them, sealed by
    /// `sync exec` with the tag as its context (a transaction sealed as a foreign write would
    /// have none).
    static func history(of path: String, ledger: TagLedger) -> HistoryFacts {
        var facts = HistoryFacts()
        do {
            let store = try Store.open(path)
            let history = try store.fetchHistory()
            let pruned = try store.prunedToken()
            let token = try store.currentToken()
            var sequences: [Replica.ID: [Int64]] = [:]
            for transaction in history { sequences[transaction.origin, default: []].append(transaction.sequence) }
            for origin in Set(sequences.keys).union(token.sequences.keys) {
                let held = sequences[origin] ?? []
                let expected = pruned[origin] < token[origin] ? Array((pruned[origin] + 1)...token[origin]) : []
                if held != expected {
                    facts.problems.append(
                        "history of origin \(origin.short): holds sequences \(summarize(held)), expected \(summarize(expected)) "
                            + "(pruned through \(pruned[origin]), token at \(token[origin]))")
                }
            }
            for transaction in history {
                var inserts: [String: Int] = [:]
                for change in transaction.changes where change.table == "items" && change.type == .insert {
                    guard case .text(let tag)? = change.values.first(where: { $0.name == "tag" })?.value else {
                        facts.problems.append(
                            "\(transaction.origin.short) #\(transaction.sequence): an items insert without a text tag")
                        continue
                    }
                    inserts[tag, default: 0] += 1
                }
                for (tag, count) in inserts {
                    facts.transactionsPerTag[tag, default: 0] += 1
                    let name = "\(transaction.origin.short) #\(transaction.sequence)"
                    guard let expected = ledger.rowCount(of: tag) else {
                        facts.problems.append("\(name) inserts rows of tag \(tag), which the harness never wrote")
                        continue
                    }
                    if count != expected {
                        facts.problems.append("\(name) inserts \(count) of the \(expected) rows of tag \(tag)")
                    }
                    if transaction.contextName != tag {
                        facts.problems.append(
                            "\(name) holds tag \(tag) but has context \(transaction.contextName ?? "nil") (sealed as a foreign write?)"
                        )
                    }
                }
            }
            for (tag, count) in facts.transactionsPerTag where count > 1 {
                facts.problems.append("tag \(tag) is in \(count) history transactions (duplicated)")
            }
        } catch {
            facts.problems.append("history could not be read: \(error)")
        }
        return facts
    }

    /// `[]`, `[5]` or `[1...7]` when contiguous, else the first few numbers.
    private static func summarize(_ sequence: [Int64]) -> String {
        guard let first = sequence.first, let last = sequence.last else { return "[]" }
        if first <= last && sequence == Array(first...last) {
            return first == last ? "[\(first)]" : "[\(first)...\(last)]"
        }
        return "\(sequence.prefix(12))\(sequence.count > 12 ? "… (\(sequence.count))" : "")"
    }
}
