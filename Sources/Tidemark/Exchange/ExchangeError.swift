import TidemarkCore

/// What went wrong exchanging bundles, on which file or peer, and what the user can do.
public enum ExchangeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file failed to decode or verify.
    case badBundle(path: String, BundleError)
    /// The bundle is signed by a key this store does not trust.
    case unknownSigner(path: String, name: String, publicKey: String)
    /// The bundle relays transactions of an origin this store does not trust.
    case unknownOrigin(path: String, origin: String)
    /// The bundle's tables do not match this store's.
    case schemaMismatch(path: String, table: String, detail: String)
    /// The bundle needs transactions this store lacks.
    case missingPrerequisites(path: String, missing: String)
    /// The bundle holds transactions of this replica that the store lacks: it was restored from an older copy.
    case restoredFromOlderCopy(path: String, have: Int64, bundleHas: Int64)
    /// Two different histories claim the same origin sequence numbers.
    case historyFork(path: String, origin: String, sequence: Int64)
    /// A file could not be read.
    case cannotRead(path: String, reason: String)
    /// A file could not be written.
    case cannotWrite(path: String, reason: String)
    /// A peer argument is invalid or conflicts with an existing peer.
    case invalidPeer(String)
    /// No peer by that name.
    case unknownPeer(String)
    /// The file is a valid bundle of a kind that carries nothing to import.
    case notImportable(path: String, kind: String)
    /// An export needs a key that does not sign for this store.
    case wrongKey(path: String)

    public var description: String {
        switch self {
        case .badBundle(let p, let e): return "\(p): \(e)"
        case .unknownSigner(let p, let n, let k): return "\(p): signed by unknown replica '\(n)' (key \(k))"
        case .unknownOrigin(let p, let o): return "\(p): carries transactions of replica \(o), whose key is not trusted"
        case .schemaMismatch(let p, let t, let d): return "\(p): bundle is for a different schema: table '\(t)' \(d)"
        case .missingPrerequisites(let p, let m): return "\(p): missing prerequisites: \(m)"
        case .restoredFromOlderCopy(let p, let have, let has):
            return "\(p): holds this replica's transactions up to #\(has) but the store has only #\(have): the store was restored from an older copy"
        case .historyFork(let p, let o, let s): return "\(p): replica \(o)'s transaction #\(s) differs from the one this store holds"
        case .cannotRead(let p, let r): return "cannot read \(p): \(r)"
        case .cannotWrite(let p, let r): return "cannot write \(p): \(r)"
        case .invalidPeer(let why): return why
        case .unknownPeer(let n): return "no peer named '\(n)'"
        case .wrongKey(let p): return "key file \(p) does not belong to this replica"
        case .notImportable(let p, let kind): return "\(p) is \(kind), not a change bundle or snapshot: nothing to import"
        }
    }

    /// What the user can do, when there is something specific.
    public var hint: String? {
        switch self {
        case .unknownSigner(_, _, let k): return "if you trust it: sync peers add NAME \(k)"
        case .unknownOrigin: return "add that replica's key with `sync peers add NAME KEY` (ask its owner for `sync identity`)"
        case .missingPrerequisites: return "import the bundles it depends on first (pull applies them in order)"
        case .restoredFromOlderCopy:
            return "continuing would reuse sequence numbers; move this store aside and create a new replica with `sync init`, then pull (see README, 'Restoring a store')"
        case .badBundle: return "the file is damaged, incomplete or not from Tidemark; ask its sender to export it again"
        case .schemaMismatch: return "both replicas must track the same tables with the same columns"
        default: return nil
        }
    }
}
