import Crypto
import Foundation
import TidemarkCore

/// The bundles a pull reads: files of the exchange folder, by address, beside held copies, which
/// are local files named by their path.
struct PullSources {
    let exchange: ExchangeFolder
    /// The exchange folder as this replica records it.
    let recorded: String
    private var files: [String: ExchangeFolder.File] = [:]
    private var validators: [String: String] = [:]
    /// Every file listed in the peers' folders, by address, with its fingerprint (`CheckedFiles`).
    private(set) var listed: [String: (file: ExchangeFolder.File, fingerprint: String?)] = [:]
    /// The exchange folder's bundles, in the order listed.
    private(set) var order: [String] = []

    init(exchange: ExchangeFolder, recorded: String) {
        self.exchange = exchange
        self.recorded = recorded
    }

    mutating func add(_ file: ExchangeFolder.File, validator: String?) {
        let address = exchange.address(of: file)
        files[address] = file
        validators[address] = validator
        order.append(address)
    }

    /// Notes a file listed in a peer's folder.
    mutating func list(_ entry: ExchangeEntry, of replica: Replica.ID) {
        let file = ExchangeFolder.File(replica: replica, name: entry.name)
        listed[exchange.address(of: file)] = (file, CheckedFiles.Fingerprint.listed(entry))
    }

    /// What tells whether a file on a server changed since it was read; nil for local files.
    func validator(of address: String) -> String? { validators[address] }

    func header(of address: String, identity: Curve25519.KeyAgreement.PrivateKey?) throws -> (
        sender: Replica.ID, header: BundleHeader, encrypted: Bool
    ) {
        if let file = files[address] { return try exchange.header(of: file, identity: identity) }
        return try ExchangeFolder.header(of: address, identity: identity)
    }

    /// A local file with all of the bundle's bytes.
    func localPath(of address: String) throws -> String {
        if let file = files[address] { return try exchange.localPath(of: file) }
        return address
    }
}
