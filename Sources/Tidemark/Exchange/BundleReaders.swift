import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// Who can open this replica's bundles in the exchange folder recorded as `recorded` when the
    /// group encrypts: for each reader, the own position after which its bundles there were
    /// encrypted for it (`Bookkeeping.Meta.bundleReadersPrefix`). Nil when nothing is recorded
    /// (the bundles went in clear, or were written before readers were recorded). A member trusted
    /// after some of them were written cannot open those, and catches up from a snapshot
    /// (Protocol/encryption.md §4.3, pruning.md §3.5).
    func bundleReaders(_ recorded: String) throws -> [Replica.ID: Int64]? {
        try mappingErrors {
            try database.read { db in
                String.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.bundleReadersPrefix + recorded))
            }
        }.map { text in
            Dictionary(
                text.split(separator: ",").compactMap { entry -> (Replica.ID, Int64)? in
                    let parts = entry.split(separator: ":")
                    guard parts.count == 2, let id = Replica.ID(hex: String(parts[0])), let position = Int64(parts[1])
                    else { return nil }
                    return (id, position)
                }, uniquingKeysWith: max)
        }
    }

    /// Records that a bundle published in `recorded`, following own transaction `since`, was
    /// encrypted for `readers` (nil: in clear, which anyone opens). A reader new to the record can
    /// open bundles from this one on; one no longer among the readers is forgotten. Writes only
    /// when the readers changed: most pushes leave the record as it is.
    func noteBundleReaders(_ readers: [Replica.ID]?, since: Int64, _ recorded: String) throws {
        let record = try bundleReaders(recorded)
        guard readers.map(Set.init) != record.map({ Set($0.keys) }) else { return }
        let known = record ?? [:]
        let text = readers.map { readers in
            readers.map { "\($0):\(known[$0] ?? since)" }.sorted().joined(separator: ",")
        }
        try mappingErrors {
            try database.write { db in
                try Bookkeeping.setMeta(db, Bookkeeping.Meta.bundleReadersPrefix + recorded, text)
            }
        }
    }
}
