import Tidemark

extension StoreSnapshot {
    /// The row digest of these rows, counted from scratch as Protocol/exchange.md §8.1 defines it:
    /// what a store's own digest, kept up to date write by write, must equal.
    public var rowDigest: RowDigest {
        RowDigest(
            tables.map { table in
                let order = table.columns.indices.sorted {
                    table.columns[$0].utf8.lexicographicallyPrecedes(table.columns[$1].utf8)
                }
                var sum: UInt64 = 0
                // A cell that holds its column's hash default is left out, as a NULL is.
                let defaults = table.columns.indices.map {
                    table.hashDefaults.indices.contains($0) ? table.hashDefaults[$0] : nil
                }
                for row in table.rows {
                    let cells = order.filter { i in
                        defaults[i].map { RowDigest.encodedValue($0) != RowDigest.encodedValue(row[i]) } ?? true
                    }
                    sum &+= RowDigest.rowHash(table: table.name, columns: cells.map { (table.columns[$0], row[$0]) })
                }
                return RowDigest.Table(name: table.name, rows: UInt64(table.rows.count), sum: sum)
            })
    }
}
