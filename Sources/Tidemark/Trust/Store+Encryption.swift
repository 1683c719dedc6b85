import Crypto
import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// The group's encryption setting (Protocol/encryption.md §1): a replicated write, so every
    /// member converges on the latest one.
    public struct EncryptionSetting: Sendable, Hashable {
        /// Whether the group encrypts what it writes to an exchange.
        public var isOn: Bool
        /// The transaction that made the setting, as origin and sequence number; nil before any
        /// member changed it.
        public var madeBy: (origin: Replica.ID, sequence: Int64)? {
            origin.map { ($0, sequence) }
        }
        var origin: Replica.ID?
        var sequence: Int64

        static let off = EncryptionSetting(isOn: false, origin: nil, sequence: 0)

        /// The stored value: `on` or `off`, the writer's replica id, and the sequence number of
        /// the transaction that writes it.
        var stored: String { "\(isOn ? "on" : "off") \(origin?.description ?? "") \(sequence)" }

        init(isOn: Bool, origin: Replica.ID?, sequence: Int64) {
            self.isOn = isOn
            self.origin = origin
            self.sequence = sequence
        }

        init?(stored: String) {
            let parts = stored.split(separator: " ")
            guard parts.count == 3, parts[0] == "on" || parts[0] == "off",
                let origin = Replica.ID(hex: String(parts[1])),
                let sequence = Int64(parts[2])
            else { return nil }
            self.init(isOn: parts[0] == "on", origin: origin, sequence: sequence)
        }
    }

    /// The group's current encryption setting.
    public func encryption() throws -> EncryptionSetting {
        try mappingErrors { try database.read { db in try Self.encryption(db) } }
    }

    static func encryption(_ db: Database) throws -> EncryptionSetting {
        guard
            let value = try String.fetchOne(
                db, sql: "SELECT value FROM tidemark_settings WHERE name = 'encryption'")
        else { return .off }
        return EncryptionSetting(stored: value) ?? .off
    }

    /// Turns the group's encryption on or off. The setting is a replicated write (author
    /// `tidemark`, context `encryption`): from the next push on, this replica encrypts every file
    /// it writes to an exchange for the group's members, and each member does the same once it has
    /// pulled the setting. Setting what is already set changes nothing and returns nil.
    @discardableResult
    public func setEncryption(_ on: Bool) throws -> Commit? {
        guard try encryption().isOn != on else { return nil }
        return try write(author: "tidemark", contextName: "encryption") { db in
            // This write's transaction: the next of this replica's sequence numbers.
            let sequence = try ReplicaState.fetch(db).sequence + 1
            let setting = EncryptionSetting(isOn: on, origin: replica.id, sequence: sequence)
            try db.execute(
                sql:
                    "INSERT INTO tidemark_settings(name, value) VALUES ('encryption', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                arguments: [setting.stored])
        }.1
    }

    /// The X25519 keys a file this replica writes is encrypted to, or nil when the group does not
    /// encrypt: this replica and `peer`, or, without one, this replica and every trusted peer.
    func envelopeRecipients(for peer: Replica.ID? = nil) throws -> [Curve25519.KeyAgreement.PublicKey]? {
        try mappingErrors { try database.read { db in try envelopeRecipients(db, for: peer) } }
    }

    func envelopeRecipients(_ db: Database, for peer: Replica.ID?) throws -> [Curve25519.KeyAgreement.PublicKey]? {
        guard try Self.encryption(db).isOn else { return nil }
        let keys = try Self.peers(db).filter { peer == nil || $0.id == peer }.map(\.publicKey)
        // `addPeer` refuses keys no one can encrypt to, so none is dropped here.
        return ([publicKey] + keys).compactMap(EnvelopeKeys.recipient(ofSigningKey:))
    }

    /// Refuses a file that arrived in clear from a sender whose signed `through` token covers the
    /// transaction that turned the group's current encryption on (Protocol/encryption.md §5).
    static func checkNotDowngraded(_ db: Database, header: BundleHeader, encrypted: Bool, path: String) throws {
        guard !encrypted else { return }
        let setting = try encryption(db)
        guard setting.isOn, let made = setting.madeBy else { return }
        if header.through[made.origin] >= made.sequence {
            throw ExchangeError.downgraded(path: path, sender: header.senderName)
        }
    }
}
