import Foundation
import GRDB
import Tidemark

/// Workload 8's measurement: per repetition (and one warm-up), a new peer writes one small
/// transaction, exports it, and the same bundle is applied to a large store and to an empty one.
struct SmallImports {
    let large: Store
    let empty: Store
    /// Makes the store of a peer, by name, at the path it returns.
    let makePeer: (String) throws -> (Store, String)
    let repetitions: Int
    /// The changes each bundle applies, checked on both sides.
    let changes: Int
    let metric: String

    /// The seconds of each measured import into the large store and into the empty one; `write`
    /// writes repetition `round`'s transaction on the peer.
    func run(_ write: (Database, Int) throws -> Void) throws -> (onLarge: [Double], onEmpty: [Double]) {
        var onLarge: [Double] = []
        var onEmpty: [Double] = []
        for round in 0...repetitions {
            let (store, path) = try makePeer("peer\(round)")
            _ = try store.write { db in try write(db, round) }
            let bundle = path + ".small.tmb"
            _ = try store.exportBundle(
                since: .zero, to: bundle, key: try KeyFile.load(KeyFile.defaultPath(forStore: path)))
            for target in [large, empty] {
                try target.addPeer(name: "peer\(round)", publicKeyBase64: Data(store.publicKey).base64EncodedString())
            }
            let largeTime = try timed { try large.importBundle(at: bundle) }
            let emptyTime = try timed { try empty.importBundle(at: bundle) }
            guard largeTime.value.appliedChanges == changes, emptyTime.value.appliedChanges == changes else {
                throw BenchError.unexpectedState(
                    metric: metric, side: .tracked, what: "applied changes", expected: Int64(changes),
                    found: Int64(min(largeTime.value.appliedChanges, emptyTime.value.appliedChanges)))
            }
            if round > 0 {
                onLarge.append(largeTime.seconds)
                onEmpty.append(emptyTime.seconds)
            }
        }
        return (onLarge, onEmpty)
    }
}
