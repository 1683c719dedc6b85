import Crypto
import Foundation
import TidemarkCore

extension Store {
    /// Encrypts this replica's own files in `exchange` that it wrote in clear before it learned
    /// that the group encrypts (Protocol/encryption.md §4.4), when the group does. A numbered
    /// bundle never changes, so it is replaced, atomically and under its name, by the same bundle
    /// encrypted: a reader sees either, and both hold the same signed bundle. The watermark and
    /// the snapshot are replaced as they are whenever this replica writes them, by new ones: an
    /// older copy must never replace a newer one another process wrote meanwhile. A file that
    /// cannot be encrypted now stays as it is until the next push. Returns how many were replaced.
    @discardableResult
    func encryptOwnClearFiles(in exchange: ExchangeFolder, key: KeyFile) throws -> Int {
        guard let recipients = try envelopeRecipients() else { return 0 }
        let folder = exchange.folder(of: replica.id)
        var count = 0
        for bundle in exchange.bundles(of: replica.id) where Self.isClear(bundle.path) {
            if (try? encryptInPlace(bundle.path, for: recipients, in: folder)) != nil { count += 1 }
        }
        if Self.isClear(folder + "/" + ExchangeFolder.watermarkName) {
            if (try? writeWatermark(in: exchange, key: key)) != nil { count += 1 }
        }
        let snapshot = folder + "/" + ExchangeFolder.snapshotName
        if Self.isClear(snapshot) {
            if (try? exportSnapshot(to: snapshot, key: key)) != nil { count += 1 }
        }
        return count
    }

    /// Whether `path` exists and is not an age file.
    private static func isClear(_ path: String) -> Bool {
        guard var source = try? FileSource(path: path) else { return false }
        defer { source.close() }
        guard let prefix = try? source.read(Envelope.intro.count), !prefix.isEmpty else { return false }
        return !Envelope.isEncrypted(prefix)
    }

    /// Replaces `path` by its content encrypted for `recipients`, through a temporary file in `folder`.
    private func encryptInPlace(_ path: String, for recipients: [Curve25519.KeyAgreement.PublicKey], in folder: String)
        throws
    {
        var source = try FileSource(path: path)
        defer { source.close() }
        let temporary = folder + "/" + ExchangeFolder.temporaryPrefix + UUID().uuidString
        do {
            let sink = try ExchangeSink(path: temporary)
            try sink.encrypt(for: recipients)
            while true {
                let bytes = try source.read(1 << 20)
                if bytes.isEmpty { break }
                try sink.write(bytes)
            }
            try sink.close()
            try FileManager.default.moveItemReplacing(at: temporary, to: path)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }
}
