import Tidemark
import TidemarkCore

/// The text and JSON forms of transactions printed by `log`, `watch` and `inspect`.
enum HistoryFormatter {
    /// One header line, then one indented line per change.
    static func text(_ transaction: History.Transaction, names: [Replica.ID: String] = [:]) -> String {
        var header =
            "\(names[transaction.origin] ?? transaction.origin.short) #\(transaction.sequence)  \(transaction.timestamp.iso8601)"
        if let author = transaction.author { header += "  author=\(author)" }
        if let context = transaction.contextName { header += "  context=\(context)" }
        if transaction.processID == nil && transaction.contextName == nil && transaction.author == nil {
            header += "  (external)"
        }
        if let version = transaction.schemaVersion { header += "  schema=v\(version.position)" }
        var lines = [header]
        for change in transaction.changes {
            let key = change.key.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
            var line = "  \(change.type.rawValue) \(change.table) [\(key)]"
            switch change.type {
            case .insert, .update:
                let keyNames = Set(change.key.map(\.name))
                let values = change.values.filter { change.type == .update || !keyNames.contains($0.name) }
                if !values.isEmpty { line += " " + values.map { "\($0.name)=\($0.value)" }.joined(separator: " ") }
            case .delete:
                let kept = (change.tombstone ?? []).filter { c in !change.key.contains { $0.name == c.name } }
                if !kept.isEmpty {
                    line += " tombstone " + kept.map { "\($0.name)=\($0.value)" }.joined(separator: " ")
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// One line: the summary `watch` prints.
    static func summary(_ transaction: History.Transaction) -> String {
        let tables = Set(transaction.changes.map(\.table)).sorted().joined(separator: ",")
        var line =
            "\(transaction.origin.short) #\(transaction.sequence) \(transaction.timestamp.iso8601) \(transaction.changes.count) change(s) [\(tables)]"
        if let author = transaction.author { line += " author=\(author)" }
        if let context = transaction.contextName { line += " context=\(context)" }
        return line
    }

    /// The JSON object documented for `log --json`.
    static func json(_ transaction: History.Transaction) -> String {
        func optional(_ s: String?) -> String { s.map(JSONText.quote) ?? "null" }
        let changes = transaction.changes.map(json).joined(separator: ",")
        return "{\"token\":\(JSONText.quote(transaction.token.description)),\"replica\":\"\(transaction.origin)\""
            + ",\"seq\":\(transaction.sequence),\"timestamp\":\"\(transaction.timestamp.iso8601)\""
            + ",\"hlc\":\(transaction.timestamp.packed)"
            + ",\"author\":\(optional(transaction.author)),\"context\":\(optional(transaction.contextName))"
            + ",\"pid\":\(transaction.processID.map(String.init) ?? "null")"
            + ",\"schema\":\(transaction.schemaVersion.map(SchemaWording.json) ?? "null"),\"changes\":[\(changes)]}"
    }

    static func json(_ change: History.Change) -> String {
        func object(_ columns: [History.Column]) -> String { JSONText.object(columns.map { ($0.name, $0.value) }) }
        var out =
            "{\"type\":\"\(change.type.rawValue)\",\"table\":\(JSONText.quote(change.table)),\"key\":\(object(change.key))"
        switch change.type {
        case .insert: out += ",\"values\":\(object(change.values))"
        case .update:
            out +=
                ",\"values\":\(object(change.values)),\"columns\":[\(change.values.map { JSONText.quote($0.name) }.joined(separator: ","))]"
        case .delete: out += ",\"tombstone\":\(object(change.tombstone ?? []))"
        }
        return out + "}"
    }

    /// A JSON array of transactions, one per line.
    static func jsonArray(_ transactions: [History.Transaction]) -> String {
        transactions.isEmpty ? "[]" : "[\n" + transactions.map(json).joined(separator: ",\n") + "\n]"
    }
}
