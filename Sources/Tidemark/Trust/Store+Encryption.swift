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
        // Off is written, for the group, also while this replica encrypts before learning it.
        guard try encryption().isOn != on || !on && encryptsBeforeLearningTheSetting() else { return nil }
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
        guard try Self.encrypts(db) else { return nil }
        let keys = try Self.peers(db).filter { peer == nil || $0.id == peer }.map(\.publicKey)
        // `addPeer` refuses keys no one can encrypt to, so none is dropped here.
        return ([publicKey] + keys).compactMap(EnvelopeKeys.recipient(ofSigningKey:))
    }

    /// Whether this replica encrypts what it writes although it has not learned the group's
    /// setting: it has learned none (`encryption()` is off, made by no one), and found a file of a
    /// peer it trusts encrypted (Protocol/encryption.md §4.5). The setting decides once it arrives.
    public func encryptsBeforeLearningTheSetting() throws -> Bool {
        try mappingErrors { try database.read { db in try Self.encryptsBeforeLearningTheSetting(db) } }
    }

    static func encryptsBeforeLearningTheSetting(_ db: Database) throws -> Bool {
        guard try encryption(db).origin == nil else { return false }
        return try !Bookkeeping.meta(db, Bookkeeping.Meta.encryptedPeerFile).isNull
    }

    /// Whether the files this replica writes to an exchange are encrypted: the setting it holds
    /// is on, or it encrypts before learning one.
    static func encrypts(_ db: Database) throws -> Bool {
        try encryption(db).isOn || encryptsBeforeLearningTheSetting(db)
    }

    /// Before a replica new to the group pushes its first file to `exchange` (Protocol/encryption.md
    /// §4.5): while it has learned no encryption setting, holds no other replica's transaction and
    /// has no file there yet, it looks at the files of each peer it trusts there, and when one is
    /// encrypted, notes it and encrypts from then on, as if the setting were on, until it learns
    /// the setting. A replica that holds others' transactions has learned the setting with them,
    /// or wrote in clear before it was made, which §4.4 mends.
    func noteEncryptedPeerFiles(in exchange: ExchangeFolder) throws {
        let own = Data(replica.id.bytes)
        let peers = try mappingErrors {
            try database.read { db -> [Replica.ID] in
                guard try Self.encryption(db).origin == nil,
                    try Bookkeeping.meta(db, Bookkeeping.Meta.encryptedPeerFile).isNull,
                    try Bool.fetchOne(
                        db, sql: "SELECT NOT EXISTS (SELECT 1 FROM tidemark_replicas WHERE replica <> ?)",
                        arguments: [own]) == true
                else { return [] }
                return try Self.peers(db).map(\.id)
            }
        }
        guard !peers.isEmpty, try exchange.transport.files(in: replica.id.description).isEmpty else { return }
        let folders = Set(try exchange.replicaFolders(except: replica.id))
        for peer in peers where folders.contains(peer) {
            let names = Set(try exchange.transport.files(in: peer.description).map(\.name))
            // Its watermark, which a pull writes, its snapshot, its newest bundle, which a push writes.
            let files =
                [ExchangeFolder.watermarkName, ExchangeFolder.snapshotName].filter(names.contains).map {
                    ExchangeFolder.File(replica: peer, name: $0)
                } + (try exchange.bundles(of: peer).last.map { [$0.file] } ?? [])
            guard files.contains(where: exchange.isEncrypted) else { continue }
            try mappingErrors {
                try database.write { db in
                    try Bookkeeping.setMeta(db, Bookkeeping.Meta.encryptedPeerFile, peer.description)
                }
            }
            return
        }
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
