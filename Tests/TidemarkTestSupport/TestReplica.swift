import Foundation
import Tidemark

/// A replica for exchange tests: a store made with `Store.initialize` in a shared temporary
/// directory, with its key file, opened through the library.
public struct TestReplica: Sendable {
    /// Two tables: `items` with a text key and one column of each storage class plus an untyped
    /// one, and `tags` with a composite key and no rowid.
    public static let schema = """
        CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, price REAL, photo BLOB, note);
        CREATE TABLE tags(item TEXT NOT NULL, tag TEXT NOT NULL, weight, PRIMARY KEY (item, tag)) WITHOUT ROWID;
        """

    /// The replica name.
    public let name: String
    /// The store file.
    public let path: String
    /// The open store.
    public let store: Store
    /// Its private key.
    public let key: KeyFile

    /// Creates `DIRECTORY/NAME.db` (and `NAME.db.key`) from `schema`.
    public init(
        _ name: String, in directory: TemporaryDirectory, schema: String = TestReplica.schema,
        preserve: [String] = ["items.name"],
        options: Store.Options = Store.Options()
    ) throws {
        self.name = name
        path = directory.file("\(name).db")
        store = try Store.initialize(
            path, setup: Store.Setup(replicaName: name, schema: ("\(name).sql", schema), preserve: preserve),
            options: options
        ).store
        key = try KeyFile.load(KeyFile.defaultPath(forStore: path))
    }

    /// Wraps an existing store file (after it was restored or changed by another process).
    public init(opening path: String, options: Store.Options = Store.Options()) throws {
        store = try Store.open(path, options: options)
        name = store.replica.name
        self.path = path
        key = try KeyFile.load(KeyFile.defaultPath(forStore: path))
    }

    /// The replica's identity.
    public var id: Replica.ID { store.replica.id }
    /// Its public key as `sync identity` prints it.
    public var publicKeyBase64: String { Data(store.publicKey).base64EncodedString() }

    /// Trusts each of `others` under its name.
    public func trust(_ others: TestReplica...) throws {
        for other in others { try store.addPeer(name: other.name, publicKeyBase64: other.publicKeyBase64) }
    }

    /// Makes every replica trust every other.
    public static func trustEachOther(_ replicas: [TestReplica]) throws {
        for replica in replicas {
            for other in replicas where other.id != replica.id { try replica.trust(other) }
        }
    }

    /// Exports what `since` does not cover to `DIRECTORY/FILE` and returns the summary.
    @discardableResult
    public func export(since: History.Token = .zero, to path: String) throws -> Store.ExportSummary {
        try store.exportBundle(since: since, to: path, key: key)
    }

    /// The tracked tables, row by row.
    public func tables() throws -> StoreSnapshot { try StoreSnapshot.trackedTables(of: path) }
    /// The whole store file: schema, user tables and bookkeeping.
    public func everything() throws -> StoreSnapshot { try StoreSnapshot.everything(of: path) }

    /// The transactions this store holds, as facts that must be the same on every replica that
    /// holds them (origin, sequence, timestamp, metadata and changes), by origin and sequence.
    public func transactions() throws -> [TransactionFacts] {
        try store.fetchHistory().map(TransactionFacts.init).sorted()
    }
}

/// What every replica holding a transaction agrees on; the token is left out, as it depends on the
/// order in which each store received its transactions.
public struct TransactionFacts: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var origin: Replica.ID
    public var sequence: Int64
    public var timestamp: HLCTimestamp
    public var author: String?
    public var contextName: String?
    public var processID: Int32?
    public var changes: [History.Change]

    public init(_ transaction: History.Transaction) {
        origin = transaction.origin
        sequence = transaction.sequence
        timestamp = transaction.timestamp
        author = transaction.author
        contextName = transaction.contextName
        processID = transaction.processID
        changes = transaction.changes
    }

    public static func < (lhs: TransactionFacts, rhs: TransactionFacts) -> Bool {
        (lhs.origin, lhs.sequence) < (rhs.origin, rhs.sequence)
    }

    public var description: String { "\(origin.short) #\(sequence) (\(changes.count) changes)" }
}
