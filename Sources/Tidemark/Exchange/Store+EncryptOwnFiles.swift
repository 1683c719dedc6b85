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
    /// cannot be encrypted now stays as it is until the next push or pull. Returns how many were
    /// replaced.
    @discardableResult
    func encryptOwnClearFiles(in exchange: ExchangeFolder, recorded: String, key: KeyFile) throws -> Int {
        guard let recipients = try envelopeRecipients() else { return 0 }
        let mine = replica.id
        var count = 0
        for bundle in try exchange.bundles(of: mine) where exchange.isClear(bundle.file) {
            if (try? encryptInPlace(bundle.file, for: recipients, in: exchange, recorded: recorded)) != nil {
                count += 1
            }
        }
        let watermark = ExchangeFolder.File(replica: mine, name: ExchangeFolder.watermarkName)
        if try exchange.contains(watermark.name, of: mine), exchange.isClear(watermark) {
            if (try? writeWatermark(in: exchange, key: key)) != nil { count += 1 }
        }
        let snapshot = ExchangeFolder.File(replica: mine, name: ExchangeFolder.snapshotName)
        if try exchange.contains(snapshot.name, of: mine), exchange.isClear(snapshot) {
            let temporary = exchange.transport.temporaryFile(for: mine.description)
            defer { try? FileManager.default.removeItem(atPath: temporary) }
            let readers = try readersOfASnapshot()
            if (try? exportSnapshot(to: temporary, key: key)) != nil, case let size = Self.fileSize(temporary),
                (try? exchange.transport.replace(snapshot.name, in: mine.description, with: temporary)) != nil
            {
                try noteWritten(recorded, mine.description, snapshot.name, size: size)
                try noteSnapshotReaders(readers, recorded)
                count += 1
            }
        }
        return count
    }

    /// Replaces `file` by its content encrypted for `recipients`.
    private func encryptInPlace(
        _ file: ExchangeFolder.File, for recipients: [Curve25519.KeyAgreement.PublicKey], in exchange: ExchangeFolder,
        recorded: String
    ) throws {
        var source = try FileSource(path: try exchange.localPath(of: file))
        defer { source.close() }
        let temporary = exchange.transport.temporaryFile(for: file.replica.description)
        do {
            let sink = try ExchangeSink(path: temporary)
            try sink.encrypt(for: recipients)
            while true {
                let bytes = try source.read(1 << 20)
                if bytes.isEmpty { break }
                try sink.write(bytes)
            }
            try sink.close()
            let size = Self.fileSize(temporary)
            try exchange.transport.replace(file.name, in: file.replica.description, with: temporary)
            try noteWritten(recorded, file.replica.description, file.name, size: size)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }
}
