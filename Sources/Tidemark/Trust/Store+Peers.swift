import Crypto
import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// A trusted member of the sync group.
    public struct Peer: Sendable, Hashable {
        /// The name given with `peers add`.
        public var name: String
        /// The 32-byte Ed25519 public key.
        public var publicKey: [UInt8]
        /// The identity derived from the key.
        public var id: Replica.ID { Replica.ID(publicKey: publicKey) }
        /// The key as base64, the form `sync identity` prints.
        public var publicKeyBase64: String { Data(publicKey).base64EncodedString() }
    }

    /// Trusts `publicKeyBase64` under `name`. Adding the same pair again changes nothing.
    public func addPeer(name: String, publicKeyBase64: String) throws {
        guard name.range(of: "^[A-Za-z0-9._-]{1,64}$", options: .regularExpression) != nil else {
            throw ExchangeError.invalidPeer(
                "invalid peer name '\(StoreError.shown(name))': use 1 to 64 letters, digits, '.', '_' or '-'")
        }
        guard let data = Data(base64Encoded: publicKeyBase64), data.count == 32,
            (try? Curve25519.Signing.PublicKey(rawRepresentation: data)) != nil
        else {
            // Never echo the argument: it may be a pasted private key.
            let words = publicKeyBase64.split(whereSeparator: \.isWhitespace)
            if words.count == 2, Data(base64Encoded: String(words[1]))?.count == 32 {
                throw ExchangeError.invalidPeer(
                    "that is a name and a public key, as a replica's identity line has them: give the public key alone"
                )
            }
            if let data = Data(base64Encoded: publicKeyBase64), data.count == KeyFile.pkcs8Prefix.count + 32 {
                throw ExchangeError.invalidPeer(
                    "that looks like a private key, not a public one: never share it; share the replica's public key instead"
                )
            }
            throw ExchangeError.invalidPeer(
                "invalid public key (\(publicKeyBase64.count) characters): expected base64 of a 32-byte Ed25519 public key"
            )
        }
        let key = Array(data)
        guard key != publicKey else { throw ExchangeError.invalidPeer("that is this replica's own key") }
        // A small-order point signs nothing anyone could not forge, and nothing could be encrypted to
        // it; a non-canonical encoding is refused in every bundle (Protocol/bundle.md §5.1).
        guard SigningKeyCheck.isAcceptable(key) else {
            throw ExchangeError.invalidPeer(
                EnvelopeKeys.recipient(ofSigningKey: key) == nil
                    ? "invalid public key: a small-order point, which no replica has"
                    : "invalid public key: not the canonical encoding of an Ed25519 public key")
        }
        try mappingErrors {
            try database.write { db in
                if let existing = try String.fetchOne(
                    db, sql: "SELECT name FROM tidemark_peers WHERE public_key = ?", arguments: [Data(key)])
                {
                    guard existing == name else {
                        throw ExchangeError.invalidPeer("that key is already trusted as '\(existing)'")
                    }
                    return
                }
                if try Data.fetchOne(db, sql: "SELECT public_key FROM tidemark_peers WHERE name = ?", arguments: [name])
                    != nil
                {
                    throw ExchangeError.invalidPeer("a different key is already trusted as '\(name)'; remove it first")
                }
                try db.execute(
                    sql: "INSERT INTO tidemark_peers(public_key, name, added_at) VALUES (?, ?, ?)",
                    arguments: [Data(key), name, options.clock.nowMilliseconds()])
            }
        }
    }

    /// Stops trusting the peer named `name`; its bundles are refused from the next import on.
    public func removePeer(name: String) throws {
        try mappingErrors {
            try database.write { db in
                try db.execute(sql: "DELETE FROM tidemark_peers WHERE name = ?", arguments: [name])
                if db.changesCount == 0 { throw ExchangeError.unknownPeer(name) }
            }
        }
    }

    /// The trusted peers, by name.
    public func peers() throws -> [Peer] {
        try database.read { db in try Self.peers(db) }
    }

    static func peers(_ db: Database) throws -> [Peer] {
        try Row.fetchAll(db, sql: "SELECT name, public_key FROM tidemark_peers ORDER BY name").map {
            Peer(name: $0[0], publicKey: [UInt8]($0[1] as Data))
        }
    }
}
