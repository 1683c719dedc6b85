import Foundation
import GRDB
import TidemarkCore

/// A store restored from an older copy of itself: once a peer's file shows it, the store publishes
/// nothing more (Protocol/exchange.md §4.4). The note is kept in `tidemark_meta`.
extension Store {
    /// Notes `error` when it shows this store to be an older copy of itself (a pull met it).
    func noteIfRestored(_ error: ExchangeError) throws {
        if case .restoredFromOlderCopy(let path, let have, let has) = error {
            try noteRestored(path: path, have: have, bundleHas: has)
        }
    }

    /// Notes that a peer's file showed this store to be an older copy of itself: from then on it
    /// publishes nothing (`checkNotRestored`).
    func noteRestored(path: String, have: Int64, bundleHas: Int64) throws {
        try mappingErrors {
            try database.write { db in
                try Bookkeeping.setMeta(db, Bookkeeping.Meta.restoredFromOlderCopy, "\(have),\(bundleHas),\(path)")
            }
        }
    }

    /// Refuses to publish anything once a pull found this store to be an older copy of itself
    /// (Protocol/exchange.md §4.4): its next transactions would reuse sequence numbers peers hold
    /// with other content.
    func checkNotRestored() throws {
        let noted = try mappingErrors {
            try database.read { db in
                String.fromDatabaseValue(try Bookkeeping.meta(db, Bookkeeping.Meta.restoredFromOlderCopy))
            }
        }
        guard let noted else { return }
        let parts = noted.split(separator: ",", maxSplits: 2).map(String.init)
        guard parts.count == 3, let have = Int64(parts[0]), let has = Int64(parts[1]) else { return }
        throw ExchangeError.restoredFromOlderCopy(path: parts[2], have: have, bundleHas: has)
    }
}
