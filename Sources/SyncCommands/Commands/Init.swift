import ArgumentParser
import Foundation
import Tidemark

extension SyncCLI {
    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a store (or adopt a SQLite database) and start tracking history.",
            discussion: """
                Tracked tables need a PRIMARY KEY chosen by the application (a UUID text key, say): it is the \
                row's identity on every replica. Rows already present are recorded as a first transaction.
                """)

        @OptionGroup var store: StoreOptions

        @Option(help: "This replica's name (letters, digits, '.', '_', '-').")
        var replica: String

        @Option(help: ArgumentHelp("SQL to run first, e.g. CREATE TABLE statements.", valueName: "file.sql"))
        var schema: String?

        @Option(
            name: .customLong("track"),
            help: ArgumentHelp("A table to track (repeatable; default: every table).", valueName: "table"))
        var tables: [String] = []

        @Option(
            help: ArgumentHelp(
                "A column whose last value a delete's tombstone keeps (repeatable).", valueName: "table.column"))
        var preserve: [String] = []

        @Option(help: ArgumentHelp("The private key file (default: STORE.key).", valueName: "path"))
        var key: String?

        @Option(help: ArgumentHelp("Join from a snapshot bundle: trust its sender and import it.", valueName: "file"))
        var from: String?

        func run() throws {
            var schemaSource: (file: String, sql: String)?
            if let schema {
                guard let data = FileManager.default.contents(atPath: schema) else {
                    throw CLIError.unreadableFile(schema)
                }
                schemaSource = (schema, String(decoding: data, as: UTF8.self))
            }
            let setup = Store.Setup(
                replicaName: replica, schema: schemaSource, tables: tables, preserve: preserve, keyPath: key)
            let (opened, created) = try Store.initialize(try store.path, setup: setup)
            Output.line("\(opened.replica.name) \(opened.replica.id)")
            if !created { Output.error("already initialized; nothing changed") }
            if let from {
                let key = try KeyFile.load(key ?? KeyFile.defaultPath(forStore: try store.path))
                let (sender, summary) = try opened.join(from: from, key: key)
                Output.line("trusted \(sender.name) \(sender.publicKeyBase64) (the sender of \(from))")
                Output.line("imported \(summary.appliedChanges) rows from its snapshot")
            }
        }
    }
}
