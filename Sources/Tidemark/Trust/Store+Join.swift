import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// Joins the group from a snapshot (or any bundle) file: verifies it, trusts its sender under
    /// the name it signed with (unless already trusted), and imports it. Returns the sender's name
    /// and key, for the caller to show.
    /// An encrypted file is opened with `key`, this replica's key file.
    public func join(from path: String, key: KeyFile? = nil) throws -> (sender: Peer, summary: ImportSummary) {
        let verified = try Store.inspectBundle(at: path, key: key) { _, _ in }
        let sender = Peer(name: verified.header.senderName, publicKey: verified.senderKey)
        if sender.publicKey != publicKey, try !peers().contains(where: { $0.publicKey == sender.publicKey }) {
            try addPeer(name: sender.name, publicKeyBase64: sender.publicKeyBase64)
        }
        return (sender, try importBundle(at: path, key: key))
    }
}
