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
            let path = try store.path
            let keyPath = key ?? KeyFile.defaultPath(forStore: path)
            let keyExisted = FileManager.default.fileExists(atPath: keyPath)
            var created = false
            do {
                try initialize(path, setup: setup, keyPath: keyPath, keyExisted: keyExisted, created: &created)
            } catch {
                // A store this command made is taken away again when joining fails: nothing was
                // created, and the same command can run again once the file is right.
                if created {
                    for suffix in ["", "-wal", "-shm", "-journal"] {
                        try? FileManager.default.removeItem(atPath: path + suffix)
                    }
                    if !keyExisted { try? FileManager.default.removeItem(atPath: keyPath) }
                }
                throw error
            }
        }

        /// Creates the store (or finds it made) and joins from `from`; the store is closed on return.
        private func initialize(
            _ path: String, setup: Store.Setup, keyPath: String, keyExisted: Bool, created: inout Bool
        ) throws {
            let opened: Store
            (opened, created) = try Store.initialize(path, setup: setup)
            // A key found beside a new store, not named with --key, is most often one a store moved
            // aside left behind: the new store is then that replica again (exchange.md §4.4). Said
            // once the store stays (a join that fails takes it away again).
            let reusedKey = created && keyExisted && key == nil
            let warnOfReusedKey = {
                guard reusedKey else { return }
                Output.error(
                    "warning: using the key file already at \(keyPath): this store is replica \(opened.replica.id.short) again, "
                        + "numbering its transactions from 1, as a store made with that key may have done already; "
                        + "for a new replica, move the key aside and run init again")
            }
            guard let from else {
                Output.line("\(opened.replica.name) \(opened.replica.id)")
                if !created { Output.error("already initialized; nothing changed") }
                warnOfReusedKey()
                return
            }
            if !created { Output.error("already initialized; joining from \(from)") }
            let (sender, summary) = try opened.join(from: from, key: try KeyFile.load(keyPath))
            Output.line("\(opened.replica.name) \(opened.replica.id)")
            Output.line("trusted \(sender.name) \(sender.publicKeyBase64) (the sender of \(from))")
            if let version = summary.waitingFor {
                Output.line("its snapshot is \(SchemaWording.held(version))")
            } else {
                Output.line("imported \(summary.snapshotRows) rows from its snapshot")
            }
            warnOfReusedKey()
        }
    }
}
