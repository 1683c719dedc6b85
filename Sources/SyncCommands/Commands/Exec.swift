import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Exec: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run SQL as one tracked transaction; if any statement fails, nothing is applied.",
            discussion: "Rows returned by queries are printed one per line, columns separated by '|'.")

        @OptionGroup var store: StoreOptions

        @Option(help: "The transaction's author.")
        var author: String?

        @Option(help: "The transaction's context name.")
        var context: String?

        @Argument(help: "One or more SQL statements.")
        var sql: String

        func run() throws {
            let (results, _) = try store.open().execute(sql: sql, author: author, contextName: context)
            for result in results {
                for row in result.rows { Output.line(row.map(Self.plain).joined(separator: "|")) }
            }
        }

        /// The `sqlite3` shell's list-mode rendering: text as is, NULL empty.
        static func plain(_ value: SQLValue) -> String {
            switch value {
            case .null: return ""
            case .text(let s): return s
            default: return value.description
            }
        }
    }
}
