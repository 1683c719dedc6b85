import Foundation
import GRDB
import TidemarkCore

/// What this replica has read of the files of exchange folders on a server, so that a pull does not
/// download again what it already read (Protocol/exchange.md §7.2): for each file, the validator the
/// listing gave it (its ETag, or size and time) and the `through` token of its header. A bundle
/// is never rewritten, so while its validator is unchanged the token holds; a watermark or
/// snapshot that is replaced gets a new validator. Owner of `tidemark_remote_files` (created by
/// `Bookkeeping.createRemoteFiles`).
enum RemoteFiles {
    /// The `through` token of `file` as read when the listing last gave it `validator`, or nil.
    static func through(_ db: Database, location: String, file: String, validator: String) throws -> History.Token? {
        try String.fetchOne(
            db, sql: "SELECT through FROM tidemark_remote_files WHERE location = ? AND file = ? AND validator = ?",
            arguments: [location, file, validator]
        ).flatMap { try? History.Token(parsing: $0) }
    }

    static func remember(
        _ db: Database, location: String, file: String, validator: String, through: History.Token
    ) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO tidemark_remote_files(location, file, validator, through) VALUES (?, ?, ?, ?)",
            arguments: [location, file, validator, through.description])
    }

    /// Forgets the files of `location` that are no longer listed (pruned by their writer).
    static func keepOnly(_ db: Database, location: String, files: Set<String>) throws {
        for file in try String.fetchAll(
            db, sql: "SELECT file FROM tidemark_remote_files WHERE location = ?", arguments: [location])
        where !files.contains(file) {
            try db.execute(
                sql: "DELETE FROM tidemark_remote_files WHERE location = ? AND file = ?", arguments: [location, file])
        }
    }
}

extension Store {
    /// The `through` token of a file of a server's exchange folder, as read when it had `validator`.
    func remoteThrough(_ recorded: String, _ address: String, validator: String) throws -> History.Token? {
        try mappingErrors {
            try database.read { db in
                try RemoteFiles.through(db, location: recorded, file: address, validator: validator)
            }
        }
    }

    /// Remembers `through` as the token of the file at `address`, read when it had `validator`.
    func rememberRemote(_ recorded: String, _ address: String, validator: String, through: History.Token) throws {
        try mappingErrors {
            try database.write { db in
                try RemoteFiles.remember(db, location: recorded, file: address, validator: validator, through: through)
            }
        }
    }
}
