import GRDB
import TidemarkCore

/// Rows of one table whose life starts in an import and that the store is expected to hold no
/// metadata for (a join from a snapshot, a bundle of inserts), gathered so that `MergeEngine`
/// writes their metadata with one statement and the rows with another: the per-statement cost is
/// most of what writing such a row costs. Each keeps the change or row state it came from, which
/// the engine merges on its own when the batch cannot be written whole.
struct NewRowBatch {
    /// The table the rows belong to; nil while the batch is empty.
    private(set) var target: MergeEngine.Target?
    /// Each row's metadata, in the order `RowMetadataStore.insertNew` takes it.
    private(set) var metadataValues: [SQLValue] = []
    /// Each row whole, in column order.
    private(set) var rowValues: [SQLValue] = []
    private(set) var hashes: [Int64?] = []
    private(set) var sources: [MergeEngine.Source] = []
    /// Rows per statement: at most 64, fewer where their values would pass SQLite's limit on
    /// parameters.
    private var capacity = 0

    var count: Int { sources.count }
    var isFull: Bool { count >= capacity }

    /// Adds a row: `values` by column index (every column set), and its `metadata`, hash included.
    mutating func add(
        _ db: Database, key: [SQLValue], values: [SQLValue?], metadata: RowMetadata, into target: MergeEngine.Target,
        _ source: MergeEngine.Source
    ) throws {
        if self.target == nil {
            self.target = target
            let widest = max(target.table.columns.count, target.metadata.newRowWidth)
            capacity = MultiRowInsert.rowsPerStatement(width: widest, db)
        }
        try target.metadata.appendNewRow(db, key: key, metadata, to: &metadataValues)
        for value in values { rowValues.append(value ?? .null) }
        hashes.append(metadata.rowHash)
        sources.append(source)
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension NewRowBatch: Sendable {}
