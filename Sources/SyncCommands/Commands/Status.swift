import ArgumentParser
import Tidemark

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the replica, its token, tracked tables and history size.")

    @OptionGroup var store: StoreOptions

    @Flag(help: "Print a JSON object.")
    var json = false

    func run() throws {
        let status = try store.open().status()
        if json {
            let tables = status.tables.map { t in
                "{\"name\":\(JSONText.quote(t.name)),\"key\":[\(t.keyColumns.map(JSONText.quote).joined(separator: ","))]"
                    + ",\"preserved\":[\(t.preservedColumns.map(JSONText.quote).joined(separator: ","))]}"
            }.joined(separator: ",")
            Output.line(
                "{\"replica\":\(JSONText.quote(status.replica.name)),\"id\":\"\(status.replica.id)\""
                    + ",\"token\":\(JSONText.quote(status.token.description)),\"tables\":[\(tables)]"
                    + ",\"history\":{\"transactions\":\(status.transactionCount),\"changes\":\(status.changeCount)"
                    + ",\"pending_changes\":\(status.pendingChangeCount),\"bytes\":\(status.historyBytes.map(String.init) ?? "null")"
                    + ",\"oldest\":\(status.oldest.map { "\"\($0.iso8601)\"" } ?? "null")"
                    + ",\"newest\":\(status.newest.map { "\"\($0.iso8601)\"" } ?? "null")}}")
            return
        }
        Output.line("replica  \(status.replica.name) \(status.replica.id)")
        Output.line("token    \(status.token)")
        for t in status.tables {
            var line = "table    \(t.name) key(\(t.keyColumns.joined(separator: ", ")))"
            if !t.preservedColumns.isEmpty { line += " preserve(\(t.preservedColumns.joined(separator: ", ")))" }
            Output.line(line)
        }
        var history = "history  \(status.transactionCount) transactions, \(status.changeCount) changes"
        if let bytes = status.historyBytes { history += ", \(bytes) bytes" }
        if let oldest = status.oldest, let newest = status.newest { history += ", \(oldest.iso8601) .. \(newest.iso8601)" }
        Output.line(history)
        if status.pendingChangeCount > 0 { Output.line("pending  \(status.pendingChangeCount) changes from other clients, sealed on next read") }
    }
}
