import Foundation
import TidemarkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
    /// The bundle holds transactions of this replica that the store lacks, or (`have` at least
    /// `bundleHas`) other ones under numbers the store uses: it was restored from an older copy.
    case restoredFromOlderCopy(path: String, have: Int64, bundleHas: Int64)
    /// Two different histories claim the same origin sequence numbers.
    case historyFork(path: String, origin: String, sequence: Int64)
    /// This store's history holds a transaction (of `origin`, number `sequence`) that changes a
    /// table or column the schema version it was written under (`position`) does not have: one
    /// written before the store took on the versions its tables already had (a store created from
    /// the app's newer schema), published under that version, or ahead of every member's version.
    /// No file can carry it whole.
    case unnamedHistory(origin: String, sequence: Int64, position: Int)
    /// This store replicates tables or columns (`names`, `t.c` or a table) that the members'
    /// newest files at `path`, written under the same schema version, do not have: it was created
    /// from a newer schema than the group's (an app's later release), and no member could apply
    /// its writes. Nothing was published.
    case aheadOfGroup(path: String, names: [String])
    /// The bundle was written under a schema version (`theirs`) that follows the same predecessor
    /// as this store's own version at that position (`ours`): the two replicas made different
    /// migrations (Protocol/schema.md §5). Nothing was applied.
    case schemaFork(path: String, ours: Schema.Version, theirs: Schema.Version)
    /// A file could not be read.
    case cannotRead(path: String, reason: String)
    /// A file could not be written.
    case cannotWrite(path: String, reason: String)
    /// Writing a file failed part way: `fault` says why. The partial file was removed, so nothing
    /// half-written is left under a name a reader would take.
    case writeFailed(path: String, FileFault)
    /// Reading a file or listing a folder failed: `fault` says why.
    case readFailed(path: String, FileFault)
    /// A peer argument is invalid or conflicts with an existing peer.
    case invalidPeer(String)
    /// No peer by that name.
    case unknownPeer(String)
    /// The file is a valid bundle of a kind that carries nothing to import.
    case notImportable(path: String, kind: String)
    /// An export needs a key that does not sign for this store.
    case wrongKey(path: String)
    /// An export or snapshot to `path` met a row (`key`, rendered with excerpts) of `table` whose
    /// change or state holds `bytes` bytes of TEXT and BLOB values, key values included: more than
    /// one bundle record may carry (`BundleFormat.maxRecordValueBytes`, Protocol/bundle.md §4.1,
    /// R36), so every reader would reject the bundle. Nothing was written to `path`.
    case rowTooLarge(path: String, table: String, key: String, bytes: Int)
    /// The file is encrypted (Protocol/encryption.md) and could not be opened: `EnvelopeError` says
    /// why (encrypted for other replicas, altered, truncated).
    case badEnvelope(path: String, EnvelopeError)
    /// The file is encrypted, and the call that read it was given no key to open it with.
    case encryptedWithoutKey(path: String)
    /// A file in clear from `sender`, whose own signed token shows it had seen the group turn
    /// encryption on (Protocol/encryption.md §5): a downgrade. Nothing was applied.
    case downgraded(path: String, sender: String)
    /// A request to the server of a WebDAV exchange folder failed: `fault` says why. `url` never
    /// holds credentials.
    case remoteFailed(url: String, RemoteFault)
    /// The netrc file at `path` could not be used for credentials: `reason` says why (never what
    /// it holds).
    case credentials(path: String, reason: String)
    /// `location` cannot be used as an exchange folder: `reason` says why.
    case badLocation(String, reason: String)

    public var description: String {
        switch self {
        case .badBundle(let p, let e): return "\(p): \(e)"
        case .unknownSigner(let p, let n, let k): return "\(p): signed by unknown replica '\(n)' (key \(k))"
        case .unknownOrigin(let p, let o): return "\(p): carries transactions of replica \(o), whose key is not trusted"
        case .schemaMismatch(let p, let t, let d): return "\(p): bundle is for a different schema: table '\(t)' \(d)"
        case .missingPrerequisites(let p, let m): return "\(p): missing prerequisites: \(m)"
        case .restoredFromOlderCopy(let p, let have, let has) where have >= has:
            return
                "\(p): holds this replica's transactions up to #\(has), and this store holds others under those numbers: the store was restored from an older copy and wrote since"
        case .restoredFromOlderCopy(let p, let have, let has):
            return
                "\(p): holds this replica's transactions up to #\(has) but the store has only #\(have): the store was restored from an older copy"
        case .historyFork(let p, let o, let s):
            return "\(p): replica \(o)'s transaction #\(s) differs from the one this store holds"
        case .aheadOfGroup(let p, let names):
            let listed = names.prefix(10).joined(separator: ", ") + (names.count > 10 ? ", …" : "")
            return
                "\(p): this store has \(listed), which the members' files there do not: it was created from a newer "
                + "schema than the group's, and its writes wait until a member publishes a version that has them; nothing was pushed"
        case .unnamedHistory(let o, let s, let position):
            return
                "transaction #\(s) of \(o) changes a table or column that "
                + (position == 0 ? "the initial schema" : "schema v\(position)")
                + ", which it was written under, does not have, so no bundle can carry it whole: it was written "
                + "before the group's versions that have them reached this store"
        case .schemaFork(let p, let ours, let theirs):
            return
                "\(p): schema lineage fork: the bundle was written under schema \(theirs) (\(theirs.change)), but this store made "
                + "\(ours) (\(ours.change)) from the same v\(ours.position - 1); the replicas made different migrations, nothing was applied"
        case .cannotRead(let p, let r): return "cannot read \(p): \(r)"
        case .cannotWrite(let p, let r): return "cannot write \(p): \(r)"
        case .writeFailed(let p, let fault):
            let name = (p as NSString).lastPathComponent
            if name.hasPrefix(".tmp-") {
                return
                    "cannot write a new file in \(FilePaths.folder(of: p)) (\(name)): \(fault); the partial file was removed and nothing was published"
            }
            return "cannot write \(p): \(fault); the partial file was removed"
        case .readFailed(let p, let fault): return "cannot read \(p): \(fault)"
        case .invalidPeer(let why): return why
        case .unknownPeer(let n): return "no peer named '\(n)'"
        case .wrongKey(let p): return "key file \(p) does not belong to this replica"
        case .notImportable(let p, let kind):
            return "\(p) is \(kind), not a change bundle or snapshot: nothing to import"
        case .rowTooLarge(let p, let t, let k, let n):
            // A push exports under a temporary name in its folder: name the folder instead.
            let target = (p as NSString).lastPathComponent.hasPrefix(".tmp-") ? "to \(FilePaths.folder(of: p))" : p
            return
                "cannot export \(target): row \(k) of table '\(t)' holds \(n) bytes of values; a bundle record holds at most "
                + "\(BundleFormat.maxRecordValueBytes) bytes (64 MiB) of TEXT and BLOB values, so no peer could read it; nothing was written"
        case .badEnvelope(let p, let e): return "\(p): \(e)"
        case .encryptedWithoutKey(let p): return "\(p) is encrypted, and no key was given to open it"
        case .downgraded(let p, let sender):
            return
                "\(p): not encrypted, but its sender '\(sender)' had seen this group turn encryption on when it signed it: "
                + "refused as a downgrade, nothing was applied"
        case .remoteFailed(let url, let fault): return "\(url): \(fault)"
        case .credentials(let path, let reason): return "cannot use netrc file \(path): \(reason)"
        case .badLocation(let location, let reason): return "cannot use \(location) as an exchange folder: \(reason)"
        }
    }

    /// What the user can do, when there is something specific.
    public var hint: String? {
        switch self {
        case .unknownSigner(_, _, let k): return "if you trust it, add its public key with Store.addPeer: \(k)"
        case .unknownOrigin: return "add that replica's public key with Store.addPeer (ask its owner for it)"
        case .missingPrerequisites: return "import the bundles it depends on first (pull applies them in order)"
        case .aheadOfGroup:
            return "push again once the other devices have upgraded to this schema and pushed or pulled since"
        case .unnamedHistory:
            return
                "if no member has made the version that has them yet, push again once one has published it; "
                + "if this transaction was published already, make a new store from a member's snapshot and write its rows there"
        case .restoredFromOlderCopy:
            return
                "continuing would reuse sequence numbers; move this store aside and create a new replica (a new name and key), then pull (see README, 'Restoring a store')"
        case .badBundle:
            return "the file is damaged, incomplete or not from Tidemark; ask its sender to export it again"
        case .schemaMismatch(_, _, let detail) where detail.contains("a migration this store has not made"):
            return
                "make that migration here too (Store.migrate), then pull or import the file again; a store created from "
                + "the app's newer schema takes the group's versions on from a bundle of its current version (a pull "
                + "imports one): make no migration its tables hold already, which would fork"
        case .schemaMismatch: return "both replicas must track the same tables with the same columns"
        case .schemaFork:
            return
                "every replica must make the same migrations in the same order; a replica on the other branch can start again as a "
                + "new store from the same app version and pull"
        case .rowTooLarge:
            return
                "keep the TEXT and BLOB values of one row within 64 MiB in total (store large content outside the tracked "
                + "tables, e.g. in a file whose path or hash the row keeps, or split it across rows), then update or delete this "
                + "row: a change this large in history never travels in a bundle, but once the row is smaller a push (or export) "
                + "sends the rows as they are in a snapshot instead"
        case .badEnvelope(_, .notARecipient):
            return
                "it was encrypted for other replicas only (exported for another peer, written before its sender trusted this "
                + "replica, or by a sender that no longer does): ask its sender to export for this replica, or to push again"
        case .badEnvelope: return "the file is damaged or incomplete; its sender writes it again on its next push"
        case .encryptedWithoutKey: return "give this replica's key file, which decrypts what the group encrypts to it"
        case .downgraded:
            return "a member's file was decrypted and put back in clear; ask that member to push again"
        case .remoteFailed(let url, let fault): return Self.hint(for: fault, url: url)
        case .credentials:
            return
                "credentials come from a netrc file ($NETRC, or ~/.netrc): machine HOST login NAME password SECRET, mode 600"
        case .writeFailed(let p, let fault): return fault.hint(folder: FilePaths.folder(of: p), writing: true)
        case .readFailed(let p, let fault): return fault.hint(folder: p, writing: false)
        case .cannotWrite(_, let r) where r.hasSuffix("is on a read-only file system"):
            return "remount that file system read-write or use another folder, then run the command again"
        case .cannotRead(_, let r) where r.hasPrefix("not a PEM file"):
            return
                "give the PEM file (-----BEGIN CERTIFICATE-----) of the authority that signed the server's certificate"
        case .cannotWrite(let p, _), .cannotRead(let p, _):
            return
                "check that \(p) and its folder exist and that this user may use them (ls -ld), then run the command again"
        default: return nil
        }
    }
}

extension ExchangeError {
    /// `error` as an export to `path` reports it: a record the encoder refused becomes `rowTooLarge`.
    static func exporting(_ error: any Error, to path: String) -> any Error {
        guard case BundleWriteError.recordTooLarge(let table, let key, let bytes)? = error as? BundleWriteError else {
            return error
        }
        return ExchangeError.rowTooLarge(path: path, table: table, key: BundleWriteError.describe(key), bytes: bytes)
    }

    /// The same error, naming `address` where it named the local file `path` (a download of it).
    func naming(_ path: String, as address: String) -> ExchangeError {
        guard path != address else { return self }
        func name(_ p: String) -> String { p == path ? address : p }
        switch self {
        case .badBundle(let p, let e): return .badBundle(path: name(p), e)
        case .unknownSigner(let p, let n, let k): return .unknownSigner(path: name(p), name: n, publicKey: k)
        case .unknownOrigin(let p, let o): return .unknownOrigin(path: name(p), origin: o)
        case .schemaMismatch(let p, let t, let d): return .schemaMismatch(path: name(p), table: t, detail: d)
        case .missingPrerequisites(let p, let m): return .missingPrerequisites(path: name(p), missing: m)
        case .restoredFromOlderCopy(let p, let have, let has):
            return .restoredFromOlderCopy(path: name(p), have: have, bundleHas: has)
        case .historyFork(let p, let o, let s): return .historyFork(path: name(p), origin: o, sequence: s)
        case .schemaFork(let p, let ours, let theirs): return .schemaFork(path: name(p), ours: ours, theirs: theirs)
        case .cannotRead(let p, let r): return .cannotRead(path: name(p), reason: r)
        case .readFailed(let p, let f): return .readFailed(path: name(p), f)
        case .notImportable(let p, let k): return .notImportable(path: name(p), kind: k)
        case .badEnvelope(let p, let e): return .badEnvelope(path: name(p), e)
        case .encryptedWithoutKey(let p): return .encryptedWithoutKey(path: name(p))
        case .downgraded(let p, let s): return .downgraded(path: name(p), sender: s)
        default: return self
        }
    }

    static func hint(for fault: RemoteFault, url: String) -> String? {
        let host = URL(string: url)?.host ?? "the server"
        switch fault {
        case .unauthorized(let sent):
            return sent
                ? "check the login and password for \(host) in the netrc file ($NETRC, or ~/.netrc)"
                : "add 'machine \(host) login NAME password SECRET' to the netrc file ($NETRC, or ~/.netrc), mode 600"
        case .forbidden: return "ask the server's administrator to let this login write there"
        case .unsupportedAuthentication:
            return "ask the server's administrator to accept Basic authentication there, over https://"
        case .tooLarge:
            return
                "ask the server's administrator to raise its upload limit (Apache: LimitRequestBody; nginx: client_max_body_size)"
        case .notFound, .notACollection, .notWebDAV:
            return "check the URL: it must name an existing WebDAV collection (a folder on the server)"
        case .untrustedCertificate:
            return
                "if you trust this server, give the certificate of the authority that signed its certificate (ExchangeSettings.caFile)"
        case .certificateForAnotherHost:
            return
                "use the host name the certificate was issued for in the URL, or have the server present one for \(host)"
        case .redirected: return "use the URL the server redirects to"
        case .tlsFailed(let reason) where reason.contains("plain http://"):
            return "use the server's http:// URL, or the port where it serves https://"
        default: return fault.isTransient ? "run the command again once the server answers" : nil
        }
    }
}
