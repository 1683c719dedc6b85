import Foundation
import Tidemark
import TidemarkTestSupport

/// A store in its own temporary directory, made with `Store.initialize`.
struct StoreFixture {
    /// Two tables: `items` with a text key and one column of each storage class plus an untyped
    /// one, and `tags` with a composite key and no rowid.
    static let schema = """
        CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, price REAL, photo BLOB, note);
        CREATE TABLE tags(item TEXT NOT NULL, tag TEXT NOT NULL, weight, PRIMARY KEY (item, tag)) WITHOUT ROWID;
        """

    let directory: TemporaryDirectory
    let path: String
    let store: Store

    /// Creates a store named `a` from `schema`, tracking every table unless `tables` names some.
    init(
        schema: String = StoreFixture.schema, tables: [String] = [], preserve: [String] = ["items.name"],
        options: Store.Options = Store.Options()
    ) throws {
        directory = try TemporaryDirectory("tidemark-lib")
        path = directory.file("store.db")
        store = try Store.initialize(
            path,
            setup: Store.Setup(replicaName: "a", schema: ("schema.sql", schema), tables: tables, preserve: preserve),
            options: options
        ).store
    }

    /// Opens the same store again (as another part of the app would), with other options.
    func reopen(options: Store.Options = Store.Options()) throws -> Store {
        try Store.open(path, options: options)
    }
}

extension History.Change {
    /// The key as a dictionary, for compact expectations.
    var keyValues: [String: SQLValue] { Dictionary(uniqueKeysWithValues: key.map { ($0.name, $0.value) }) }
    /// The values as a dictionary.
    var valueMap: [String: SQLValue] { Dictionary(uniqueKeysWithValues: values.map { ($0.name, $0.value) }) }
    /// The tombstone as a dictionary (nil when there is none).
    var tombstoneMap: [String: SQLValue]? {
        tombstone.map { Dictionary(uniqueKeysWithValues: $0.map { ($0.name, $0.value) }) }
    }
}

/// What a change says about its row: kind, table, key, values and tombstone. Expectations compare
/// these and leave out bookkeeping they do not pin down (such as `History.Change.generation`).
struct RowChange: Equatable {
    var type: History.ChangeType
    var table: String
    var key: [History.Column]
    var values: [History.Column]
    var tombstone: [History.Column]?

    init(
        type: History.ChangeType, table: String, key: [History.Column], values: [History.Column],
        tombstone: [History.Column]? = nil
    ) {
        self.type = type
        self.table = table
        self.key = key
        self.values = values
        self.tombstone = tombstone
    }
}

extension History.Change {
    /// This change as a `RowChange`.
    var row: RowChange { RowChange(type: type, table: table, key: key, values: values, tombstone: tombstone) }
}

extension Array where Element == History.Change {
    /// The changes as `RowChange`s.
    var rows: [RowChange] { map(\.row) }
}
