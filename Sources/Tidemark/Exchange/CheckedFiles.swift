import Foundation
import GRDB

/// What this replica concluded about files of exchange folders, so that it neither checks nor
/// reports a file again while the file is unchanged (Protocol/exchange.md §6.5). Owner of
/// `tidemark_checked_files` (created by `Bookkeeping.createCheckedFiles`).
///
/// Two kinds of conclusion are kept, each under the fingerprint it holds for:
/// - of this replica's own files, that they are sound: written by this replica (fingerprint
///   `Fingerprint.written(size:)`, since the listing then gives the same size) or read whole and
///   verified;
/// - of a peer's file that is junk (damaged, or not an exchange file), the warning a pull gave
///   about it, which later pulls do not repeat;
/// - of a peer's bundle that waits for what a damaged bundle held, the warning given, prefixed
///   with `waiting`: said once, but the bundle is tried on every pull (it is not junk).
enum CheckedFiles {
    /// The verdict kept for a sound file of this replica.
    static let sound = "sound"
    /// How the verdict kept for a bundle waiting for a damaged one begins.
    static let waiting = "waits: "

    /// The verdict kept for `name` in `folder` of the exchange folder recorded as `location`, if
    /// it was reached while the file had `fingerprint`.
    static func verdict(
        _ db: Database, location: String, folder: String, name: String, fingerprint: String
    ) throws -> String? {
        try String.fetchOne(
            db,
            sql: """
                SELECT verdict FROM tidemark_checked_files
                WHERE location = ? AND folder = ? AND name = ? AND fingerprint = ?
                """,
            arguments: [location, folder, name, fingerprint])
    }

    static func remember(
        _ db: Database, location: String, folder: String, name: String, fingerprint: String, verdict: String
    ) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO tidemark_checked_files(location, folder, name, fingerprint, verdict)
                VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [location, folder, name, fingerprint, verdict])
    }

    static func forget(_ db: Database, location: String, folder: String, name: String) throws {
        try db.execute(
            sql: "DELETE FROM tidemark_checked_files WHERE location = ? AND folder = ? AND name = ?",
            arguments: [location, folder, name])
    }

    /// Forgets the files of `folder` that are no longer listed there.
    static func keepOnly(_ db: Database, location: String, folder: String, names: Set<String>) throws {
        for name in try String.fetchAll(
            db, sql: "SELECT name FROM tidemark_checked_files WHERE location = ? AND folder = ?",
            arguments: [location, folder])
        where !names.contains(name) {
            try forget(db, location: location, folder: folder, name: name)
        }
    }

    /// Forgets the folders of `location` that are no longer listed (a peer's whole folder removed).
    static func keepOnlyFolders(_ db: Database, location: String, folders: Set<String>) throws {
        for folder in try String.fetchAll(
            db, sql: "SELECT DISTINCT folder FROM tidemark_checked_files WHERE location = ?", arguments: [location])
        where !folders.contains(folder) {
            try db.execute(
                sql: "DELETE FROM tidemark_checked_files WHERE location = ? AND folder = ?",
                arguments: [location, folder])
        }
    }

    /// How a conclusion names the state of a file it holds for.
    enum Fingerprint {
        /// A file this replica wrote, by the size it wrote: a copy a sync tool cut short, or
        /// another version put in its place, lists another size.
        static func written(size: Int64) -> String { "size \(size)" }

        /// A listed file: its validator on a server, its size and times in a local folder; nil
        /// when the listing says neither.
        static func listed(_ entry: ExchangeEntry) -> String? {
            if let validator = entry.validator { return validator }
            guard let size = entry.size else { return nil }
            let time = { (date: Date?) in date.map { String(format: "%.6f", $0.timeIntervalSince1970) } ?? "-" }
            return "\(size) \(time(entry.modified)) \(time(entry.changed))"
        }
    }
}
