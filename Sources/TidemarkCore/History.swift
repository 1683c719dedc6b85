/// Persistent history: the transactions a store has recorded, in the words of Core Data's
/// `NSPersistentHistoryTransaction` and SwiftData's `HistoryTransaction` where the concepts match.
public enum History {}

extension History {
    /// The kind of a change, as `NSPersistentHistoryChangeType`.
    public enum ChangeType: String, Sendable, Hashable, Codable {
        /// A row was inserted; the change carries every column.
        case insert
        /// Columns of an existing row changed; the change carries those columns only.
        case update
        /// A row was deleted; the change carries its tombstone.
        case delete
    }

    /// One row-level change inside a transaction.
    public struct Change: Sendable, Hashable {
        /// What happened to the row.
        public var type: ChangeType
        /// The table the row belongs to.
        public var table: String
        /// The row's identity: its primary-key columns, in key order.
        public var key: [Column]
        /// For an insert, every column; for an update, the columns whose value changed and their new
        /// values. Empty for a delete.
        public var values: [Column]
        /// For a delete, the tombstone: the key columns and the columns marked "preserve after
        /// deletion", with their last values. Nil otherwise.
        public var tombstone: [Column]?
        /// The row's causal length after the change, as its writer saw it: odd while the row lives,
        /// even once deleted; each insert after a delete starts a new life (Protocol/merge.md).
        /// Zero when not yet known (a local change not yet folded into row metadata).
        public var generation: Int64

        /// Creates a change.
        public init(
            type: ChangeType, table: String, key: [Column], values: [Column], tombstone: [Column]? = nil,
            generation: Int64 = 0
        ) {
            self.type = type
            self.table = table
            self.key = key
            self.values = values
            self.tombstone = tombstone
            self.generation = generation
        }

        /// For an update, the names of the columns that changed (`updatedProperties`); empty otherwise.
        public var updatedColumns: [String] { type == .update ? values.map(\.name) : [] }
    }

    /// A named column value.
    public struct Column: Sendable, Hashable {
        /// The column name.
        public var name: String
        /// The value.
        public var value: SQLValue
        /// Creates a column value.
        public init(_ name: String, _ value: SQLValue) {
            self.name = name
            self.value = value
        }
    }

    /// One recorded transaction.
    public struct Transaction: Sendable, Hashable {
        /// The origin: the replica that made the transaction (Protocol/README.md glossary).
        public var origin: Replica.ID
        /// The origin, by its former name.
        @available(*, deprecated, renamed: "origin")
        public var replica: Replica.ID {
            get { origin }
            set { origin = newValue }
        }
        /// The transaction's position in its origin's history: 1, 2, 3… with no gaps.
        public var sequence: Int64
        /// When its origin sealed it, on that replica's hybrid logical clock.
        public var timestamp: HLCTimestamp
        /// Who made it, as passed by the writer (`NSPersistentHistoryTransaction.author`).
        public var author: String?
        /// The writer's context name (`contextName`).
        public var contextName: String?
        /// The writing process's id (`processID`), when known. Writes sealed from foreign clients
        /// (other SQLite programs) have none.
        public var processID: Int32?
        /// The changes, in the order they were made.
        public var changes: [Change]
        /// The store's token once this transaction is applied (`NSPersistentHistoryTransaction.token`).
        public var token: Token
        /// The schema version it was written under; nil for the initial schema (before any
        /// migration that changed what replicates).
        public var schemaVersion: Schema.Version?

        /// Creates a transaction.
        public init(
            origin: Replica.ID, sequence: Int64, timestamp: HLCTimestamp, author: String?, contextName: String?,
            processID: Int32?, changes: [Change], token: Token, schemaVersion: Schema.Version? = nil
        ) {
            self.schemaVersion = schemaVersion
            self.origin = origin
            self.sequence = sequence
            self.timestamp = timestamp
            self.author = author
            self.contextName = contextName
            self.processID = processID
            self.changes = changes
            self.token = token
        }
    }
}

extension History {
    /// A transaction's fields without its changes, as a bundle decoder reads them before streaming
    /// the changes (Protocol/bundle.md §4.2).
    public struct TransactionHeader: Sendable, Hashable {
        /// The origin replica.
        public var origin: Replica.ID
        /// The origin's sequence number.
        public var sequence: Int64
        /// The origin's timestamp.
        public var timestamp: HLCTimestamp
        /// The author, if any.
        public var author: String?
        /// The context name, if any.
        public var contextName: String?
        /// The process id, if known.
        public var processID: Int32?
        /// How many changes follow.
        public var changeCount: Int
        /// The lineage position of the schema version it was written under (0: the initial
        /// schema; Protocol/schema.md §4).
        public var schemaPosition: Int = 0
    }
}
