import Foundation
import Tidemark
import TidemarkCore

/// The text and JSON forms of transactions printed by `log`, `watch` and `inspect`.
enum HistoryFormatter {
    /// One header line, then one indented line per change.
    static func text(_ transaction: History.Transaction, names: [Replica.ID: String] = [:]) -> String {
        var header =
            "\(names[transaction.origin] ?? transaction.origin.short) #\(transaction.sequence)  \(transaction.timestamp.iso8601)"
        if let author = transaction.author { header += "  author=\(label(author))" }
        if let context = transaction.contextName { header += "  context=\(label(context))" }
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
        if let author = transaction.author { line += " author=\(label(author))" }
        if let context = transaction.contextName { line += " context=\(label(context))" }
        return line
    }

    /// An author or context name as a line shows it: as it is when it is one word, else quoted as
    /// values are (`'…'`, a quote doubled, line breaks and other control characters as SQLite's
    /// `char(…)`), so that no name can read as more fields or as another line.
    static func label(_ text: String) -> String {
        let special = CharacterSet.whitespacesAndNewlines.union(.controlCharacters).union(
            CharacterSet(charactersIn: "'\"="))
        if !text.isEmpty && !text.unicodeScalars.contains(where: special.contains) { return text }
        return SQLValue.text(text).description
    }

    /// The JSON object documented for `log --json`.
    static func json(_ transaction: History.Transaction) -> JSON {
        [
            "token": .string(transaction.token.description), "replica": .string(transaction.origin.description),
            "seq": .integer(transaction.sequence), "timestamp": .date(transaction.timestamp),
            "hlc": .integer(transaction.timestamp.packed), "author": .string(transaction.author),
            "context": .string(transaction.contextName), "pid": .integer(transaction.processID),
            "schema": transaction.schemaVersion.map(SchemaWording.json) ?? .null,
            "changes": .array(transaction.changes.map(json)),
        ]
    }

    /// One change: its values for an insert, its values and their column names for an update, its
    /// tombstone for a delete.
    static func json(_ change: History.Change) -> JSON {
        var members: [(String, JSON)] = [
            ("type", .string(change.type.rawValue)), ("table", .string(change.table)), ("key", .columns(change.key)),
        ]
        switch change.type {
        case .insert: members.append(("values", .columns(change.values)))
        case .update:
            members += [("values", .columns(change.values)), ("columns", .strings(change.values.map(\.name)))]
        case .delete: members.append(("tombstone", .columns(change.tombstone ?? [])))
        }
        return .object(members)
    }
}
