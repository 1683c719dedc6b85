import Foundation
import GRDB
import TidemarkCore

/// The watermarks an exchange folder holds, as `Store.readWatermarks` found them.
struct FolderWatermarks {
    /// The addresses of the peers' watermarks, relayed watermarks and snapshots, for the memory of
    /// what was read.
    var listed: Set<String> = []
    /// Per member, the token of its own watermark there.
    var own: [Replica.ID: History.Token] = [:]
    /// Per member, the newest token among the relays of its watermark there, this replica's included.
    var relayed: [Replica.ID: History.Token] = [:]
    /// The members whose watermark this replica relays there.
    var relayedHere: Set<Replica.ID> = []
}

extension Store {
    /// Reads every watermark of `exchange` not read before (on a server: unchanged since, by its
    /// validator), the peers' own and those relayed by any replica (Protocol/exchange.md §3.3), and
    /// records what they say.
    func readWatermarks(
        in exchange: ExchangeFolder, recorded: String, failures: inout PullFailures, key: KeyFile
    ) throws -> FolderWatermarks {
        var found = FolderWatermarks()
        let own = try currentToken()[self.replica.id]
        for folder in try exchange.replicaFolders(except: self.replica.id) + [self.replica.id] {
            let entries = try exchange.transport.files(in: folder.description)
            if folder != self.replica.id, entries.contains(where: { $0.name == ExchangeFolder.snapshotName }) {
                found.listed.insert(exchange.address(of: .init(replica: folder, name: ExchangeFolder.snapshotName)))
            }
            for entry in entries {
                let member: Replica.ID
                let relay = ExchangeFolder.relayedMember(entry.name)
                if entry.name == ExchangeFolder.watermarkName && folder != self.replica.id {
                    member = folder
                } else if let relay, relay != self.replica.id {
                    member = relay
                    if folder == self.replica.id { found.relayedHere.insert(relay) }
                } else {
                    continue
                }
                let file = ExchangeFolder.File(replica: folder, name: entry.name)
                let address = exchange.address(of: file)
                found.listed.insert(address)
                var token: History.Token?
                var local = address
                do {
                    // A watermark read before and not replaced since says nothing new.
                    if let validator = entry.validator {
                        token = try remoteThrough(recorded, address, validator: validator)
                    }
                    if token == nil {
                        local = try exchange.localPath(of: file)
                        let read = try readWatermark(at: local, key: key)
                        // A member that holds more of this replica's transactions than this store, or
                        // one of them signed for before this store wrote it: an older copy (exchange.md §4.4).
                        if let (_, read, signedAt) = read,
                            try read[self.replica.id] > own
                                || ownTransaction(min(read[self.replica.id], own), isNewerThan: signedAt)
                        {
                            try noteRestored(path: address, have: own, bundleHas: read[self.replica.id])
                        }
                        if let (_, read, _) = read, let validator = entry.validator {
                            try rememberRemote(recorded, address, validator: validator, through: read)
                        }
                        token = read?.1
                    }
                } catch ExchangeError.badEnvelope(_, .notARecipient(_)) where relay != nil {
                    // Its member encrypts for the replicas it trusts, and may not trust this one.
                } catch let error as ExchangeError {
                    failures.record(error, reading: local, as: address)
                }
                guard let token else { continue }
                if relay == nil {
                    found.own[member] = token
                } else {
                    found.relayed[member] = found.relayed[member].map { $0.merged(with: token) } ?? token
                }
            }
        }
        return found
    }

    /// Relays into this replica's folder of `exchange` the latest watermark of each trusted member
    /// that the folder holds no watermark as new as (the member does not reach it, or reached it
    /// longer ago than another folder), so that the folder's members learn what it has applied;
    /// removes its relays that the member's own watermark there has caught up with, or of a
    /// replica no longer trusted (Protocol/exchange.md §3.3). Each relay is the member's signed
    /// file, unchanged.
    func relayWatermarks(in exchange: ExchangeFolder, found: FolderWatermarks) throws {
        let mine = replica.id.description
        let (trusted, files) = try mappingErrors {
            try database.read { db in
                (
                    Set(try Self.peers(db).map(\.id)),
                    try Row.fetchAll(
                        db,
                        sql: """
                            SELECT replica, signed_file_token, signed_file FROM tidemark_watermarks
                            WHERE signed_file IS NOT NULL
                            """
                    )
                )
            }
        }
        for row in files {
            guard let member = Replica.ID(bytes: Array(row[0] as Data)), member != replica.id,
                trusted.contains(member), let token = try? History.Token(parsing: row[1]), let file = row[2] as Data?
            else { continue }
            let name = ExchangeFolder.relayedWatermarkName(of: member)
            if let own = found.own[member], own.covers(token) {
                if found.relayedHere.contains(member) { try? exchange.transport.remove(name, in: mine) }
                continue
            }
            if let relayed = found.relayed[member], relayed.covers(token) { continue }
            let temporary = exchange.transport.temporaryFile(for: mine)
            defer { try? FileManager.default.removeItem(atPath: temporary) }
            try file.write(to: URL(fileURLWithPath: temporary))
            try exchange.transport.replace(name, in: mine, with: temporary)
        }
        for member in found.relayedHere where !trusted.contains(member) {
            try? exchange.transport.remove(ExchangeFolder.relayedWatermarkName(of: member), in: mine)
        }
    }
}
