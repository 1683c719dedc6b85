import Foundation
import GRDB
import TidemarkCore

/// The exchange folders this replica uses, as `tidemark_folders` records them: where it pushes and
/// pulls, how far its bundles in each carry every origin, and the last number it published there.
/// The owner of `tidemark_folders`.
extension Store {
    /// Opens the exchange folder at `location` and remembers it; returns it with the key this
    /// replica records it under.
    func openExchange(_ location: String, settings: ExchangeSettings) throws -> (ExchangeFolder, String) {
        let recorded = try ExchangeLocation.key(location)
        try checkNotAReplicaSubfolder(location, recorded: recorded)
        let exchange = ExchangeFolder(try ExchangeLocation.transport(for: location, settings: settings))
        do {
            try mappingErrors {
                try database.write { db in
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO tidemark_folders(path) VALUES (?)", arguments: [recorded])
                }
            }
        } catch {
            exchange.transport.close()
            throw error
        }
        return (exchange, recorded)
    }

    /// Whether this replica uses more than one exchange folder: only then may it relay a member's
    /// watermark into a folder that member does not reach (Protocol/exchange.md §3.3).
    func usesSeveralFolders() throws -> Bool {
        try mappingErrors {
            try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tidemark_folders") ?? 0 > 1 }
        }
    }

    /// Refuses a location that is a replica's own subfolder of an exchange (this replica's, or a
    /// peer's, named by its id), as `push` prints a bundle's address: a pull from it would find no
    /// replica there, and a push would write a folder inside another's.
    private func checkNotAReplicaSubfolder(_ location: String, recorded: String) throws {
        var trimmed = Substring(recorded)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/"),
            let id = Replica.ID(hex: String(trimmed[trimmed.index(after: slash)...]))
        else { return }
        let owner =
            id == replica.id ? "this replica" : try peers().first { $0.id == id }.map { "peer \($0.name)" }
        guard let owner else { return }
        throw ExchangeError.badLocation(
            location,
            reason:
                "it is \(owner)'s own subfolder of an exchange; give the exchange folder that holds it, \(trimmed[...slash])"
        )
    }

    /// How far this replica's bundles in the exchange folder recorded as `recorded` carry each origin.
    func pushedThrough(_ recorded: String) throws -> History.Token? {
        try mappingErrors {
            try database.read { db in
                try String.fetchOne(
                    db, sql: "SELECT pushed_through FROM tidemark_folders WHERE path = ?", arguments: [recorded])
            }
        }.flatMap { try? History.Token(parsing: $0) }
    }

    func setPushedThrough(_ recorded: String, _ token: History.Token, number: Int) throws {
        try mappingErrors {
            try database.write { db in
                try db.execute(
                    sql:
                        "UPDATE tidemark_folders SET pushed_through = ?, last_number = max(last_number, ?) WHERE path = ?",
                    arguments: [token.description, number, recorded])
            }
        }
    }

    func lastPushedNumber(_ recorded: String) throws -> Int {
        try mappingErrors {
            try database.read { db in
                try Int.fetchOne(
                    db, sql: "SELECT last_number FROM tidemark_folders WHERE path = ?", arguments: [recorded]) ?? 0
            }
        }
    }

    /// The exchange folders this replica has pushed to or pulled from: absolute paths, and the
    /// URLs of WebDAV collections.
    public func exchangeFolders() throws -> [String] {
        try database.read { db in try String.fetchAll(db, sql: "SELECT path FROM tidemark_folders ORDER BY path") }
    }
}
