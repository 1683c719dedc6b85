import Foundation
import GRDB
import TidemarkCore

/// Folds this replica's own captured changes into row metadata (Protocol/merge.md §3), lazily:
/// capture only appends to history, and the fold runs before anything reads metadata — an export
/// (which needs each change's generation), an import (which merges against it) or a prune (which
/// must never delete history that is not yet folded).
struct LocalFold {
    let db: Database
    let store: Store

    /// Folds every own transaction sealed since the last fold.
    func run() throws {
        let own = Data(store.replica.id.bytes)
        let folded = try Int64.fetchOne(db, sql: "SELECT folded_seq FROM tidemark_state WHERE id = 1") ?? 0
        let transactions = try Row.fetchAll(
            db, sql: "SELECT seq, hlc, first_change, last_change FROM tidemark_transactions WHERE replica = ? AND seq > ? ORDER BY seq",
            arguments: [own, folded])
        guard let last = transactions.last else { return }
        let origins = OriginNumbers(db: db)
        let stores = Dictionary(uniqueKeysWithValues: store.replicatedTables.map { ($0.id, RowMetadataStore(table: $0, origins: origins)) })
        let decoder = ChangeDecoder(tables: store.replicatedTables)
        let valueColumns = try Bookkeeping.valueColumnCount(db)
        let changes = try db.makeStatement(
            sql: "SELECT \(ChangeDecoder.selectList(valueColumns: valueColumns)), id FROM tidemark_changes WHERE id BETWEEN ? AND ? ORDER BY id")
        let setGeneration = try db.makeStatement(sql: "UPDATE tidemark_changes SET gen = ? WHERE id = ?")
        for transaction in transactions {
            let clock = MergeClock(timestamp: HLCTimestamp(packed: transaction[1]), origin: store.replica.id)
            let rows = try Row.fetchCursor(changes, arguments: [transaction[2], transaction[3]])
            while let row = try rows.next() {
                let id: Int64 = row[4 + valueColumns]
                let tableID: Int64 = row[0]
                guard let metadataStore = stores[tableID], let change = try decoder.decode(row) else { continue }
                let key = change.key.map(\.value)
                var metadata = try metadataStore.fetch(db, key: key)
                switch change.type {
                case .insert:
                    if !metadata.isAlive { metadata = RowMetadata(generation: metadata.afterInsert, clocks: .init(repeating: nil, count: metadata.clocks.count)) }
                    for column in change.values { if let i = metadataStore.table.index(of: column.name), !metadataStore.table.keyIndexes.contains(i) { metadata.clocks[i] = clock } }
                case .update:
                    if !metadata.isAlive { metadata.generation = metadata.afterInsert }
                    for column in change.values { if let i = metadataStore.table.index(of: column.name) { metadata.clocks[i] = clock } }
                case .delete:
                    metadata = RowMetadata(generation: metadata.afterDelete, clocks: .init(repeating: nil, count: metadata.clocks.count))
                }
                try metadataStore.save(db, key: key, metadata)
                try setGeneration.execute(arguments: [metadata.generation, id])
            }
        }
        try db.execute(sql: "UPDATE tidemark_state SET folded_seq = ? WHERE id = 1", arguments: [last[0] as Int64])
    }
}
