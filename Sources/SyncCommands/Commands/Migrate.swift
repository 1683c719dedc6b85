import ArgumentParser
import Foundation
import Tidemark

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change the schema and adapt tracking in one transaction; on any error nothing changes.",
        discussion: """
            Supported: new tracked tables (--track), columns added to tracked tables (nullable or with a \
            DEFAULT), changed preserved columns (--preserve), indexes, views and untracked tables. A change \
            to a primary key, or a dropped or renamed tracked table or column, is refused. Data the SQL \
            changes is not recorded in history: every replica runs the same migration.
            """)

    @OptionGroup var store: StoreOptions

    @Option(name: .customLong("track"), help: ArgumentHelp("A table to start tracking (repeatable).", valueName: "table"))
    var tables: [String] = []

    @Option(
        help: ArgumentHelp(
            "A column a delete's tombstone keeps (repeatable); for each table named, exactly these.", valueName: "table.column"))
    var preserve: [String] = []

    @Argument(help: ArgumentHelp("The migration's SQL.", valueName: "file.sql"))
    var file: String?

    func validate() throws {
        if file == nil && tables.isEmpty && preserve.isEmpty {
            throw ValidationError("give a migration file, --track or --preserve")
        }
    }

    func run() throws {
        var sql: String?
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else { throw CLIError.unreadableFile(file) }
            sql = String(decoding: data, as: UTF8.self)
        }
        let summary = try store.open().migrate(Store.Migration(sql: sql, track: tables, preserve: preserve))
        for line in Self.describe(summary) { Output.line(line) }
    }

    /// One line per change to tracking, or one saying there was none.
    static func describe(_ summary: Store.MigrationSummary, version: Bool = true) -> [String] {
        var lines = summary.addedColumns.keys.sorted().map { "added \($0): \(summary.addedColumns[$0]!.joined(separator: ", "))" }
        lines += summary.trackedTables.map { "tracking \($0)" }
        lines += summary.preserveChanged.map { "preserving changed for \($0)" }
        if version, let made = summary.version { lines.append("schema is now \(made)") }
        return lines.isEmpty ? ["schema changed; tracking unchanged"] : lines
    }
}
