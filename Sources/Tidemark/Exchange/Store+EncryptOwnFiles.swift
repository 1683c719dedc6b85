import Crypto
import Foundation
import TidemarkCore

extension Store {
    /// Encrypts this replica's own files in `exchange` that it wrote in clear before it learned
    /// that the group encrypts (Protocol/encryption.md §4): each is replaced, atomically and under
    /// the same name, by the same bundle encrypted for `recipients`. A reader sees the old file or
    /// the new one, and both hold the same signed bundle. Returns how many files it encrypted.
    @discardableResult
    func encryptOwnClearFiles(in exchange: ExchangeFolder, for recipients: [Curve25519.KeyAgreement.PublicKey]) throws
        -> Int
    {
        let folder = exchange.folder(of: replica.id)
        let paths =
            exchange.bundles(of: replica.id).map(\.path)
            + [ExchangeFolder.snapshotName, ExchangeFolder.watermarkName].map { folder + "/" + $0 }
        var count = 0
        for path in paths where FileManager.default.fileExists(atPath: path) {
            var source = try FileSource(path: path)
            defer { source.close() }
            let prefix = try source.read(Envelope.intro.count)
            guard !Envelope.isEncrypted(prefix) else { continue }
            let temporary = folder + "/" + ExchangeFolder.temporaryPrefix + UUID().uuidString
            do {
                let sink = try ExchangeSink(path: temporary, recipients: recipients)
                var bytes = prefix
                while !bytes.isEmpty {
                    try sink.write(bytes)
                    bytes = try source.read(1 << 20)
                }
                try sink.close()
                try FileManager.default.moveItemReplacing(at: temporary, to: path)
            } catch {
                try? FileManager.default.removeItem(atPath: temporary)
                throw error
            }
            count += 1
        }
        return count
    }
}
