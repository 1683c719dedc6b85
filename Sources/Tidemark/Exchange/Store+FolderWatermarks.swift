import Foundation
import GRDB
import TidemarkCore

/// The watermarks an exchange folder holds, as `Store.readWatermarks` found them.
struct FolderWatermarks {
    /// A relayed watermark as read: its token, and when its member signed it (nil for one a server
    /// said was unchanged since an earlier pull, which is not read again).
    struct Relay {
        var token: History.Token
        var signedAt: HLCTimestamp?

        /// Whether it says at least as much as a watermark of `token` signed at `signedAt`.
        func covers(_ token: History.Token, signedAt: HLCTimestamp) -> Bool {
            self.token.covers(token) && self.signedAt.map { $0 >= signedAt } ?? true
        }
    }

    /// The addresses of the peers' watermarks, relayed watermarks and snapshots, for the memory of
    /// what was read.
    var listed: Set<String> = []
    /// Per member, the token of its own watermark there.
    var own: [Replica.ID: History.Token] = [:]
    /// Per member, the relays of its watermark in other replicas' folders, taken together.
    var relayedByOthers: [Replica.ID: Relay] = [:]
    /// Per member, this replica's relay of its watermark there, where it reads.
    var relayedHere: [Replica.ID: Relay] = [:]
    /// The members whose watermark this replica relays there, read or not.
    var relaysHere: Set<Replica.ID> = []
}

extension Store {
    /// Reads every watermark of `exchange` not read before (on a server: unchanged since, by its
    /// validator), the peers' own and those relayed by any replica (Protocol/exchange.md §3.3), and
    /// records what they say. A relay of this replica's own that cannot be read, or that relays its
    /// own watermark, is removed: `relayWatermarks` writes it again where it is needed.
    func readWatermarks(
        in exchange: ExchangeFolder, recorded: String, failures: inout PullFailures, key: KeyFile
    ) throws -> FolderWatermarks {
        var found = FolderWatermarks()
        let own = try currentToken()[self.replica.id]
        // In one folder every member's own watermark is there: nothing to keep for relaying.
        let keepingFiles = try usesSeveralFolders()
        let mine = replica.id
        for folder in try exchange.replicaFolders(except: mine) + [mine] {
            let entries = try exchange.transport.files(in: folder.description)
            if folder != mine, entries.contains(where: { $0.name == ExchangeFolder.snapshotName }) {
                found.listed.insert(exchange.address(of: .init(replica: folder, name: ExchangeFolder.snapshotName)))
            }
            for entry in entries {
                let relay = ExchangeFolder.relayedMember(entry.name)
                if relay == mine, folder == mine { try? exchange.transport.remove(entry.name, in: mine.description) }
                guard
                    let member = entry.name == ExchangeFolder.watermarkName && folder != mine
                        ? folder : relay.flatMap({ $0 == mine ? nil : $0 })
                else { continue }
                if folder == mine { found.relaysHere.insert(member) }
                let file = ExchangeFolder.File(replica: folder, name: entry.name)
                let address = exchange.address(of: file)
                var read: (token: History.Token, signedAt: HLCTimestamp?)?
                var local = address
                do {
                    // A watermark read before and not replaced since says nothing new.
                    if let validator = entry.validator,
                        let token = try remoteThrough(recorded, address, validator: validator)
                    {
                        read = (token, nil)
                    } else {
                        local = try exchange.localPath(of: file)
                        read = try readWatermark(
                            at: local, key: key, address: address, own: own, keepingFiles: keepingFiles
                        ).map {
                            ($0.1, $0.signedAt)
                        }
                        if let read, let validator = entry.validator {
                            try rememberRemote(recorded, address, validator: validator, through: read.token)
                        }
                    }
                } catch ExchangeError.badEnvelope(_, .notARecipient(_)) where relay != nil && folder != mine {
                    // Its member encrypts for the replicas it trusts, and may not trust this one.
                } catch let error as ExchangeError {
                    if folder == mine {
                        try? exchange.transport.remove(entry.name, in: mine.description)
                    } else {
                        failures.record(error, reading: local, as: address)
                    }
                }
                if folder != mine || read != nil { found.listed.insert(address) }
                guard let read else { continue }
                if relay == nil {
                    found.own[member] = read.token
                } else if folder == mine {
                    found.relayedHere[member] = FolderWatermarks.Relay(token: read.token, signedAt: read.signedAt)
                } else if let other = found.relayedByOthers[member] {
                    let signedAt = [other.signedAt, read.signedAt].compactMap { $0 }.max()
                    found.relayedByOthers[member] = .init(
                        token: other.token.merged(with: read.token), signedAt: signedAt)
                } else {
                    found.relayedByOthers[member] = .init(token: read.token, signedAt: read.signedAt)
                }
            }
        }
        return found
    }

    /// Reads a watermark of `exchange` (`readWatermark`), and notes this store as an older copy of
    /// itself when its signer holds more of this replica's transactions than `own`, or one of them
    /// signed for before this store wrote it (exchange.md §4.4).
    private func readWatermark(at path: String, key: KeyFile, address: String, own: Int64, keepingFiles: Bool)
        throws -> (
            Replica.ID, History.Token, signedAt: HLCTimestamp
        )?
    {
        let read = try readWatermark(at: path, key: key, keepingFile: keepingFiles)
        if let (_, token, signedAt) = read,
            try token[replica.id] > own || ownTransaction(min(token[replica.id], own), isNewerThan: signedAt)
        {
            try noteRestored(path: address, have: own, bundleHas: token[replica.id])
        }
        return read
    }

    /// Relays into this replica's folder of `exchange` the latest watermark kept of each trusted
    /// member whose own watermark there does not cover it, where no relay there covers it or it
    /// was signed later than every one read there (a member that does not reach the folder still
    /// signs one at each pull elsewhere, and `--max-lag` counts from the latest); removes its
    /// relays that the member's own watermark there, or another replica's relay, has caught up
    /// with, or of a replica no longer trusted (Protocol/exchange.md §3.3). Each relay is the
    /// member's signed file, unchanged.
    func relayWatermarks(in exchange: ExchangeFolder, found: FolderWatermarks) throws {
        let mine = replica.id.description
        let (trusted, files) = try mappingErrors {
            try database.read { db in
                (
                    Set(try Self.peers(db).map(\.id)),
                    try Row.fetchAll(
                        db,
                        sql: """
                            SELECT replica, signed_file_token, signed_file_at, signed_file FROM tidemark_watermarks
                            WHERE signed_file IS NOT NULL
                            """
                    )
                )
            }
        }
        for row in files {
            guard let member = Replica.ID(bytes: Array(row[0] as Data)), member != replica.id,
                trusted.contains(member), let token = try? History.Token(parsing: row[1]), let file = row[3] as Data?
            else { continue }
            let signedAt = HLCTimestamp(packed: (row[2] as Int64?) ?? 0)
            let name = ExchangeFolder.relayedWatermarkName(of: member)
            if found.own[member]?.covers(token) ?? false
                || found.relayedByOthers[member]?.covers(token, signedAt: signedAt) ?? false
            {
                if found.relaysHere.contains(member) { try? exchange.transport.remove(name, in: mine) }
                continue
            }
            if found.relayedHere[member]?.covers(token, signedAt: signedAt) ?? false { continue }
            let temporary = exchange.transport.temporaryFile(for: mine)
            defer { try? FileManager.default.removeItem(atPath: temporary) }
            try file.write(to: URL(fileURLWithPath: temporary))
            try exchange.transport.replace(name, in: mine, with: temporary)
        }
        for member in found.relaysHere where !trusted.contains(member) {
            try? exchange.transport.remove(ExchangeFolder.relayedWatermarkName(of: member), in: mine)
        }
    }
}
