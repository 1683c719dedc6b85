import Crypto
import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// The latest token `replica` is known to hold, learned from its signed watermarks and bundles;
    /// zero when nothing is known.
    public func knownToken(of replica: Replica.ID) throws -> History.Token {
        try mappingErrors { try database.read { db in try Self.knownToken(of: replica, db) } }
    }

    static func knownToken(of replica: Replica.ID, _ db: Database) throws -> History.Token {
        let text = try String.fetchOne(
            db, sql: "SELECT token FROM tidemark_watermarks WHERE replica = ?", arguments: [Data(replica.bytes)])
        return text.flatMap { try? History.Token(parsing: $0) } ?? .zero
    }

    /// The latest token the trusted peer named `name` is known to hold.
    public func knownToken(ofPeer name: String) throws -> History.Token {
        guard let peer = try peers().first(where: { $0.name == name }) else { throw ExchangeError.unknownPeer(name) }
        return try knownToken(of: peer.id)
    }

    /// Records that `replica` held `token` at `signedAt` (as its own signature showed); keeps the
    /// larger. A watermark's `digest` of its rows at `token` replaces the one kept before. `file`,
    /// the watermark file itself, replaces the one kept for relaying unless that says more.
    func noteWatermark(
        _ token: History.Token, of replica: Replica.ID, signedAt: HLCTimestamp, digest: RowDigest? = nil,
        tables: [BundleHeader.TableSchema] = [], file: Data? = nil
    ) throws {
        try mappingErrors {
            try database.write { db in
                let key = Data(replica.bytes)
                var merged = token
                let known = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT token, signed_at, signed_file_token, signed_file_at FROM tidemark_watermarks
                        WHERE replica = ?
                        """,
                    arguments: [key])
                let knownToken = (known?[0] as String?).flatMap { try? History.Token(parsing: $0) }
                // The token learned from bundles may pass the latest watermark's: the file is kept apart.
                let fileToken = (known?[2] as String?).flatMap { try? History.Token(parsing: $0) }
                if let knownToken { merged = knownToken.merged(with: token) }
                if !(knownToken.map { $0.covers(token) && $0 != token } ?? false) {
                    let previous = (known?[1] as Int64?) ?? 0
                    try db.execute(
                        sql: """
                            INSERT INTO tidemark_watermarks(replica, token, signed_at) VALUES (?, ?, ?)
                            ON CONFLICT(replica) DO UPDATE SET token = excluded.token, signed_at = excluded.signed_at
                            """,
                        arguments: [key, merged.description, max(previous, signedAt.packed)])
                    if let digest {
                        try db.execute(
                            sql:
                                "UPDATE tidemark_watermarks SET digest = ?, digest_token = ?, digest_schema = ? WHERE replica = ?",
                            arguments: [Data(digest.bytes), token.description, Self.tablesFingerprint(tables), key])
                    }
                }
                // The newest file: a later token, or the same one signed again (a relay of an older
                // copy says less).
                let fileSigned = (known?[3] as Int64?) ?? 0
                if let file,
                    fileToken.map({ token.covers($0) && (token != $0 || signedAt.packed > fileSigned) }) ?? true
                {
                    try db.execute(
                        sql: """
                            UPDATE tidemark_watermarks SET signed_file = ?, signed_file_token = ?, signed_file_at = ?
                            WHERE replica = ?
                            """,
                        arguments: [file, token.description, signedAt.packed, key])
                }
            }
        }
    }

    /// The row digest `replica`'s latest watermark carried, with the token it describes and the
    /// fingerprint of the tables that watermark listed (nil for one kept by an earlier build).
    static func watermarkDigest(of replica: Replica.ID, _ db: Database) throws -> (
        RowDigest, History.Token, tables: String?
    )? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT digest, digest_token, digest_schema FROM tidemark_watermarks WHERE replica = ?",
                arguments: [Data(replica.bytes)]),
            let bytes = row[0] as Data?, let text = row[1] as String?, let token = try? History.Token(parsing: text),
            let digest = try? RowDigest(bytes: Array(bytes))
        else { return nil }
        return (digest, token, row[2])
    }

    /// A fingerprint of the tables a watermark lists: names, keys and columns. A watermark lists
    /// them as its writer's current schema version names them, as its row digest does
    /// (Protocol/exchange.md §8.4): two digests made under different versions are not compared.
    static func tablesFingerprint(_ tables: [BundleHeader.TableSchema]) -> String {
        var text = ""
        for table in tables.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
            for part in [[table.name], table.keyColumns, table.columns] {
                text += part.map { "\($0.utf8.count):\($0)" }.joined() + ";"
            }
        }
        return HexCoding.encode(Array(SHA256.hash(data: Data(text.utf8))))
    }

    /// Reads and verifies a watermark file, the signer's own or one relayed by another replica;
    /// returns the token if it is intact and signed by a trusted replica, which it then records,
    /// with the file when `keepingFile` (for relaying).
    @discardableResult
    func readWatermark(at path: String, key: KeyFile, keepingFile: Bool = false) throws -> (
        Replica.ID, History.Token, signedAt: HLCTimestamp
    )? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let source = try ExchangeSource(path: path, identity: key.envelopeIdentity)
        defer { source.close() }
        do {
            let decoder = try BundleDecoder(source)
            let verified = try decoder.finish()
            guard verified.header.kind == .watermark else { return nil }
            let sender = verified.sender
            let trusted = try peers().contains { $0.id == sender }
            guard sender == replica.id || trusted else { return nil }
            try mappingErrors {
                try database.read { db in
                    try Self.checkNotDowngraded(db, header: verified.header, encrypted: source.encrypted, path: path)
                }
            }
            try noteWatermark(
                verified.header.through, of: sender, signedAt: verified.header.created, digest: verified.header.digest,
                tables: verified.header.tables,
                file: sender == replica.id || !keepingFile ? nil : try? Data(contentsOf: URL(fileURLWithPath: path)))
            return (sender, verified.header.through, verified.header.created)
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
    }

    /// Writes `<id>/watermark.tmw`: a signed bundle of kind watermark whose `through` token is what
    /// this replica has applied. Replaced atomically. Returns its address.
    func writeWatermark(in exchange: ExchangeFolder, key: KeyFile) throws -> String {
        let mine = replica.id.description
        try exchange.transport.createFolder(mine)
        let temporary = exchange.transport.temporaryFile(for: mine)
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let token = try currentToken()
        _ = try exportBundle(since: token, to: temporary, key: key, kind: .watermark)
        try exchange.transport.replace(ExchangeFolder.watermarkName, in: mine, with: temporary)
        return exchange.transport.address(of: ExchangeFolder.watermarkName, in: mine)
    }
}
