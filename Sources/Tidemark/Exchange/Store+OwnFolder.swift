import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// What tidying this replica's own folder of an exchange folder did (Protocol/exchange.md §6.5).
    struct OwnFolderTidy {
        /// Files removed, each as `address: why`.
        var removed: [String] = []
        /// Files kept although they are not this replica's exchange files, each as `address: why`;
        /// each is said once while it is unchanged.
        var kept: [String] = []
        /// Whether a numbered bundle was removed as damaged: the next bundle then depends on
        /// nothing this replica's bundles here carry.
        var removedBundle = false
        /// Whether this replica's snapshot was removed as damaged: others may have removed bundles
        /// because it held them, so the push writes it again.
        var removedSnapshot = false
    }

    /// Tidies this replica's own folder of `exchange`, which only this replica writes: removes
    /// abandoned temporaries, and files with an exchange file's name that are junk once it has
    /// checked that it does not need them — a copy a sync tool made of one of its files (a conflict
    /// copy, `0000000003 (1).tmb`, `watermark.sync-conflict-….tmw`), or one that is not a sound
    /// file. A file signed by this replica that holds transactions its store lacks is kept, and so
    /// is a file of any other name: nothing Tidemark wrote. With
    /// `checkPublished`, its numbered bundles and snapshot are checked too, each once per size:
    /// one that a sync tool put back damaged (cut short, altered) is removed, and what it held
    /// goes out again in the next push. A file that cannot be read now is left for next time.
    func tidyOwnFolder(
        _ exchange: ExchangeFolder, recorded: String, key: KeyFile, checkPublished: Bool
    ) throws -> OwnFolderTidy {
        var tidy = OwnFolderTidy()
        let mine = replica.id.description
        tidy.removed = exchange.removeAbandonedTemporaries(of: replica.id).map {
            "\($0): left by an interrupted write"
        }
        let current = try currentToken()
        for entry in try exchange.transport.files(in: mine)
        where !entry.name.hasPrefix(".") && entry.name != ExchangeFolder.watermarkName
            && ExchangeFolder.relayedMember(entry.name) == nil
        {
            try check(
                entry, of: exchange, recorded: recorded, key: key, current: current, checkPublished: checkPublished,
                into: &tidy)
        }
        let names = Set(try exchange.transport.files(in: mine).map(\.name))
        try mappingErrors {
            try database.write { db in
                try CheckedFiles.keepOnly(db, location: recorded, folder: mine, names: names)
            }
        }
        return tidy
    }

    /// Checks one file of this replica's own folder (`tidyOwnFolder`), unless it was checked
    /// before as it is now, and removes it or keeps it.
    private func check(
        _ entry: ExchangeEntry, of exchange: ExchangeFolder, recorded: String, key: KeyFile, current: History.Token,
        checkPublished: Bool, into tidy: inout OwnFolderTidy
    ) throws {
        let mine = replica.id.description
        let file = ExchangeFolder.File(replica: replica.id, name: entry.name)
        let published = ExchangeFolder.bundleNumber(entry.name) != nil || entry.name == ExchangeFolder.snapshotName
        if published && !checkPublished { return }
        let fingerprint =
            published ? entry.size.map(CheckedFiles.Fingerprint.written(size:)) : CheckedFiles.Fingerprint.listed(entry)
        if let fingerprint, try checkedVerdict(recorded, mine, entry.name, fingerprint) != nil { return }
        let address = exchange.address(of: file)
        guard ExchangeFolder.hasExchangeExtension(entry.name) else {
            // Nothing Tidemark or a sync tool copying its files wrote: someone's own file, kept.
            guard let fingerprint else { return }
            let warning = "\(address): kept: not an exchange file, and Tidemark removes only what it wrote"
            try remember(recorded, mine, entry.name, fingerprint, warning)
            tidy.kept.append(warning)
            return
        }
        let verified: VerifiedBundle
        var local: String?
        do {
            local = try exchange.localPath(of: file)
            verified = try Self.inspectBundle(at: local!, key: key, transactions: { _, _ in })
        } catch var error as ExchangeError where error.isDamage {
            // A server's file is read from a local copy: named by its own name, not the copy's.
            if let local { error = error.naming(local, as: entry.name) }
            guard (try? exchange.transport.remove(entry.name, in: mine)) != nil else { return }
            if entry.name == ExchangeFolder.snapshotName {
                tidy.removedSnapshot = true
                tidy.removed.append("\(address): damaged (\(error)); this push writes it again")
            } else if published {
                tidy.removedBundle = true
                tidy.removed.append("\(address): damaged (\(error)); the next push carries what it held")
            } else {
                tidy.removed.append("\(address): not an exchange file of this replica")
            }
            return
        } catch {
            return  // Unreachable or unreadable now: checked on a later push or pull.
        }
        if published {
            if verified.sender == replica.id {
                if let fingerprint { try remember(recorded, mine, entry.name, fingerprint, CheckedFiles.sound) }
                return
            }
            tidy.removedBundle = tidy.removedBundle || entry.name != ExchangeFolder.snapshotName
            tidy.removedSnapshot = tidy.removedSnapshot || entry.name == ExchangeFolder.snapshotName
        }
        let why: String? =
            verified.sender != replica.id
            ? "signed by another replica"
            : verified.header.kind == .watermark
                ? "an older copy of this replica's watermark"
                : current.covers(verified.header.through) ? "a copy of what this replica's store holds" : nil
        if let why {
            if (try? exchange.transport.remove(entry.name, in: mine)) != nil {
                tidy.removed.append("\(address): \(why)")
            }
        } else if let fingerprint {
            let warning =
                "\(address): kept: signed by this replica, it holds transactions its store lacks "
                + "(\(verified.header.through)); import it if they should be kept"
            try remember(recorded, mine, entry.name, fingerprint, warning)
            tidy.kept.append(warning)
        }
    }

    /// Records that this replica wrote `name`, of `size` bytes, in its folder `folder` of the
    /// exchange folder recorded as `recorded`: a sound file while its size is unchanged.
    func noteWritten(_ recorded: String, _ folder: String, _ name: String, size: Int64?) throws {
        guard let size else { return }
        try remember(recorded, folder, name, CheckedFiles.Fingerprint.written(size: size), CheckedFiles.sound)
    }

    /// The size of the local file at `path` (a temporary about to be published: publishing may move it).
    static func fileSize(_ path: String) -> Int64? {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value
    }

    func checkedVerdict(_ recorded: String, _ folder: String, _ name: String, _ fingerprint: String) throws -> String? {
        try mappingErrors {
            try database.read { db in
                try CheckedFiles.verdict(
                    db, location: recorded, folder: folder, name: name, fingerprint: fingerprint)
            }
        }
    }

    private func remember(
        _ recorded: String, _ folder: String, _ name: String, _ fingerprint: String, _ verdict: String
    ) throws {
        try mappingErrors {
            try database.write { db in
                try CheckedFiles.remember(
                    db, location: recorded, folder: folder, name: name, fingerprint: fingerprint, verdict: verdict)
            }
        }
    }
}

extension ExchangeError {
    /// Whether this says that a file's bytes are not a sound exchange file (cut short, altered,
    /// not a bundle at all), as opposed to a file that could not be reached or is not trusted.
    var isDamage: Bool {
        switch self {
        case .badBundle, .badEnvelope, .encryptedWithoutKey: true
        default: false
        }
    }
}
