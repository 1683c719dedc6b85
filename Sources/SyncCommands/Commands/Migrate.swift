import ArgumentParser
import Foundation
import Tidemark

extension SyncCLI {
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the schema and adapt tracking in one transaction; on any error nothing changes.",
            discussion: """
                Supported: new tracked tables (--track), untracked tables (--untrack; the SQL may then drop \
                them), added columns (nullable or with a DEFAULT), dropped columns, renamed columns and tables \
                (they keep their identity across replicas), changed preserved columns (--preserve), indexes, \
                views and untracked tables. Refused: a change to a primary key, and dropping columns of a \
                table while adding or renaming others in the same migration (make them two migrations). Data \
                the SQL changes is not recorded in history: every replica runs the same migration.
                """)

        @OptionGroup var store: StoreOptions

        @Option(
            name: .customLong("track"),
            help: ArgumentHelp("A table to start tracking (repeatable).", valueName: "table"))
        var tables: [String] = []

        @Option(help: ArgumentHelp("A table to stop tracking (repeatable); its history stays.", valueName: "table"))
        var untrack: [String] = []

        @Option(
            help: ArgumentHelp(
                "A column a delete's tombstone keeps (repeatable); for each table named, exactly these.",
                valueName: "table.column"))
        var preserve: [String] = []

        @Argument(help: ArgumentHelp("The migration's SQL.", valueName: "file.sql"))
        var file: String?

        func validate() throws {
            if file == nil && tables.isEmpty && untrack.isEmpty && preserve.isEmpty {
                throw ValidationError("give a migration file, --track, --untrack or --preserve")
            }
            if let both = tables.first(where: untrack.contains) {
                throw ValidationError("table '\(both)' is both in --track and --untrack")
            }
        }

        func run() throws {
            var sql: String?
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else { throw CLIError.unreadableFile(file) }
                sql = String(decoding: data, as: UTF8.self)
            }
            let migration = Store.Migration(sql: sql, track: tables, untrack: untrack, preserve: preserve)
            let summary: Store.MigrationSummary
            do {
                summary = try store.open().migrate(migration)
            } catch StoreError.trackedTableChanged {
                // Another client changed a table in a way only this migration can say (dropped it).
                summary = try Store.migrate(migration, storeAt: try store.path)
            }
            for line in Self.describe(summary) { Output.line(line) }
        }

        /// One line per change to tracking, or one saying there was none.
        static func describe(_ summary: Store.MigrationSummary, version: Bool = true) -> [String] {
            var lines = summary.renamedTables.keys.sorted().map {
                "renamed table \($0) to \(summary.renamedTables[$0]!)"
            }
            lines += summary.renamedColumns.keys.sorted().flatMap { table in
                summary.renamedColumns[table]!.sorted { $0.key < $1.key }.map {
                    "renamed \(table).\($0.key) to \($0.value)"
                }
            }
            lines += summary.addedColumns.keys.sorted().map {
                "added \($0): \(summary.addedColumns[$0]!.joined(separator: ", "))"
            }
            lines += summary.droppedColumns.keys.sorted().map {
                "dropped \($0): \(summary.droppedColumns[$0]!.joined(separator: ", "))"
            }
            lines += summary.trackedTables.map { "tracking \($0)" }
            lines += summary.untrackedTables.map { "no longer tracking \($0)" }
            lines += summary.preserveChanged.map { "preserving changed for \($0)" }
            if version, let made = summary.version { lines.append("schema is now \(made)") }
            if lines.isEmpty && summary.changedSchema { lines.append("schema changed; tracking unchanged") }
            guard lines.isEmpty else {
                guard summary.wroteRows else { return lines }
                return lines + [
                    "the migration wrote rows: what it wrote to tables tracked before it is not history, and other "
                        + "replicas have it only by making the same migration"
                ]
            }
            guard summary.wroteRows else { return ["nothing changed"] }
            return [
                "schema unchanged; the migration wrote rows, which are not history: other replicas have them only by "
                    + "making the same migration (`sync exec` writes rows that replicate)"
            ]
        }
    }
}
