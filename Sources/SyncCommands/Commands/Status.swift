import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the replica, its token, tracked tables and history size.")

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print a JSON object.")
        var json = false

        func run() throws {
            let opened = try store.open()
            let status = try opened.status()
            let members = try opened.members(countingBytes: true)
            let encrypted = try opened.encryption().isOn
            let digest = try opened.rowDigest().digest
            if json {
                Output.line(Self.json(status, members: members, encrypted: encrypted, digest: digest).text)
                return
            }
            Output.line("replica  \(status.replica.name) \(status.replica.id)")
            if let restored = status.restoredFromOlderCopy {
                Output.line(
                    "restored \(restored); push, pull, export and prune refuse it: \(CLIWording.restoredAdvice)")
            }
            Output.line("token    \(status.token)")
            for t in status.tables {
                var line = "table    \(t.name) key(\(t.keyColumns.joined(separator: ", ")))"
                if !t.preservedColumns.isEmpty { line += " preserve(\(t.preservedColumns.joined(separator: ", ")))" }
                Output.line(line)
            }
            Output.line("schema   \(SchemaWording.current(status.lineage))")
            for wait in status.waiting { Output.line("waiting  \(SchemaWording.waiting(wait))") }
            let names = Self.names(members)
            for fork in status.forks {
                Output.line("fork     \(SchemaWording.fork(fork, peer: names[fork.peer] ?? fork.peer.description))")
            }
            if encrypted { Output.line("encrypt  on: exchange files are encrypted for the group's members") }
            var history = "history  \(status.transactionCount) transactions, \(status.changeCount) changes"
            if let bytes = status.historyBytes { history += ", \(bytes) bytes" }
            if let oldest = status.oldest, let newest = status.newest {
                history += ", \(oldest.iso8601) .. \(newest.iso8601)"
            }
            Output.line(history)
            Output.line("rows     \(DigestWording.line(digest))")
            Output.line("deleted  \(status.tombstones) tombstones, kept until every member has applied their delete")
            let forked = Set(status.forks.map(\.peer))
            for m in members where !m.isSelf {
                var line = "member   \(m.name)\(m.retired ? " (retired)" : "")"
                if forked.contains(m.id) {
                    // Lacking nothing, or lacking it for good: neither applies the other's changes.
                    line += ": forked (see `fork` above), applies none of this store's changes"
                } else if m.behindTransactions == 0 {
                    line += ": up to date"
                } else {
                    line += ": lacks \(m.behindTransactions) transactions"
                    if m.behindInHistory < m.behindTransactions {
                        // Pruned here, or received in a snapshot: counted, but not in the changes and bytes.
                        line +=
                            ", \(m.behindTransactions - m.behindInHistory) no longer in history here (it catches up from a snapshot)"
                        if m.behindInHistory > 0 { line += "; \(m.behindInHistory) in history" }
                    }
                    if m.behindChanges > 0 { line += " (\(m.behindChanges) changes, \(m.behindBytes) bytes)" }
                    if let since = m.lackingSince { line += " since \(since.iso8601)" }
                }
                line += m.signedAt.map { ", watermark signed \($0.iso8601)" } ?? ", no watermark yet"
                switch m.rows {
                case .same: line += "; same rows as here"
                case .differ(let tables): line += "; rows differ in \(tables.map { "'\($0)'" }.joined(separator: ", "))"
                case .otherToken: line += "; rows not compared (its digest is of another token)"
                case .otherSchema: line += "; rows not compared (its digest is of another schema version)"
                case .unknown: break
                }
                Output.line(line)
            }
            if status.pendingChangeCount > 0 {
                Output.line("pending  \(status.pendingChangeCount) changes from other clients, sealed on next read")
            }
        }

        /// The object `status --json` prints.
        static func json(_ status: Store.Status, members: [Store.Member], encrypted: Bool, digest: RowDigest) -> JSON {
            let names = Self.names(members)
            let list = members.map { m in
                [
                    "rows": rowsJSON(m.rows),
                    "name": .string(m.name), "id": .string(m.id.description), "self": .bool(m.isSelf),
                    "retired": .bool(m.retired), "watermark": .string(m.watermark.description),
                    "signed_at": .date(m.signedAt),
                    "behind": [
                        "transactions": .integer(m.behindTransactions), "in_history": .integer(m.behindInHistory),
                        "changes": .integer(m.behindChanges),
                        "bytes": .integer(m.behindBytes), "since": .date(m.lackingSince),
                    ],
                ] as JSON
            }
            let tables = status.tables.map { t in
                ["name": .string(t.name), "key": .strings(t.keyColumns), "preserved": .strings(t.preservedColumns)]
                    as JSON
            }
            let document: JSON = [
                "replica": .string(status.replica.name), "id": .string(status.replica.id.description),
                "token": .string(status.token.description), "tables": .array(tables),
                "history": [
                    "transactions": .integer(status.transactionCount), "changes": .integer(status.changeCount),
                    "pending_changes": .integer(status.pendingChangeCount), "bytes": .integer(status.historyBytes),
                    "oldest": .date(status.oldest), "newest": .date(status.newest),
                ],
                "schema": SchemaWording.json(status, names: names), "encryption": .bool(encrypted),
                "members": .array(list),
                "digest": DigestWording.json(digest), "tombstones": .integer(status.tombstones),
                "restored_from_older_copy": .string(status.restoredFromOlderCopy.map { "\($0)" }),
            ]
            return document
        }

        /// The members' names by id.
        static func names(_ members: [Store.Member]) -> [Replica.ID: String] {
            Dictionary(members.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        }

        /// A member's `"rows"`: how its rows compare with this replica's.
        static func rowsJSON(_ rows: Store.RowComparison) -> JSON {
            switch rows {
            case .same: return ["state": .string("same")]
            case .differ(let tables): return ["state": .string("differ"), "tables": .strings(tables)]
            case .otherToken(let token): return ["state": .string("other_token"), "token": .string(token.description)]
            case .otherSchema: return ["state": .string("other_schema")]
            case .unknown: return ["state": .string("unknown")]
            }
        }
    }
}
