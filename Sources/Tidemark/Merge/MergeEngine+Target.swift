import TidemarkCore

extension MergeEngine {
    /// One table's registration, row metadata and rows. A class: looked up once per change, it is
    /// then one reference to retain, where a copy of the registration retained each of its arrays.
    final class Target {
        let table: TrackedTable
        let metadata: RowMetadataStore
        let rows: RowAccess
        /// Whether the table is one of Tidemark's own (`TrackedTable.isInternal`), kept to save the
        /// name comparison per change.
        let isInternal: Bool
        /// Batches of new rows written whole, and refused (each then merged one row at a time): once
        /// refusals outnumber them by 4, the table's new rows are merged one at a time only.
        var writtenBatches = 0
        var refusedBatches = 0
        /// The names of the non-key columns and their indexes, scanned for a narrow table: cheaper
        /// than hashing a name.
        private let nonKeyNames: [String]
        private let nonKeyIndexes: [Int]
        /// The index of each non-key column by name, for a wide table: a change names each column it
        /// carries, and a scan per name grew with the square of the width (200 columns: a fifth of
        /// an import).
        private let wideIndex: [String: Int]?

        init(table: TrackedTable, metadata: RowMetadataStore, rows: RowAccess) {
            self.table = table
            self.metadata = metadata
            self.rows = rows
            isInternal = table.isInternal
            nonKeyIndexes = table.columns.indices.filter { !table.keyIndexes.contains($0) }
            nonKeyNames = nonKeyIndexes.map { table.columns[$0] }
            wideIndex =
                nonKeyIndexes.count > 16 ? Dictionary(uniqueKeysWithValues: zip(nonKeyNames, nonKeyIndexes)) : nil
        }

        /// The index of the non-key column `name`, or nil when the table has none of that name.
        func nonKeyColumn(_ name: String) -> Int? {
            if let wideIndex { return wideIndex[name] }
            return nonKeyNames.firstIndex(of: name).map { nonKeyIndexes[$0] }
        }
    }
}
