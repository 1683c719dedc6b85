import Foundation
import GRDB
import TidemarkCore

/// Applies a verified bundle inside the caller's write transaction: re-reads and re-verifies the
/// file while it writes the rows and records the transactions in history, with the capture triggers
/// lifted so imported changes are not captured a second time as local ones.
struct BundleApplier {
    let db: Database
    let store: Store
    let context: ImportContext
    let path: String

    func apply(expected: VerifiedBundle) throws -> Store.ImportSummary {
        for table in store.trackedTables { try CaptureTriggers.remove(table, in: db) }
        try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
        let source = try FileSource(path: path)
        defer { source.close() }
        var applied = (transactions: 0, changes: 0)
        var skipped = 0
        var newestClock = HLCTimestamp.zero
        let verified: VerifiedBundle
        do {
            let decoder = try BundleDecoder(source)
            while let head = try decoder.nextTransaction() {
                let known = context.token[head.origin]
                if head.sequence <= known {
                    while try decoder.nextChange() != nil {}
                    skipped += 1
                    if head.sequence == known, let stored = context.heads[head.origin]?.1, decoder.lastCompleted?.chainHash != stored {
                        throw ExchangeError.historyFork(path: path, origin: head.origin.description, sequence: head.sequence)
                    }
                    continue
                }
                var first: Int64?
                var last = try Int64.fetchOne(db, sql: "SELECT max(id) FROM tidemark_changes") ?? 0
                while let change = try decoder.nextChange() {
                    try write(change)
                    last = try record(change)
                    if first == nil { first = last }
                    applied.changes += 1
                }
                try db.execute(
                    sql: """
                        INSERT INTO tidemark_transactions(replica, seq, hlc, author, context, pid, first_change, last_change, chain)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        Data(head.origin.bytes), head.sequence, head.timestamp.packed, head.author, head.contextName, head.processID,
                        first ?? last + 1, last, Data(decoder.lastCompleted!.chainHash),
                    ])
                newestClock = max(newestClock, head.timestamp)
                applied.transactions += 1
            }
            verified = try decoder.finish()
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
        guard verified.digest == expected.digest else {
            throw ExchangeError.cannotRead(path: path, reason: "the file changed while it was being imported")
        }
        for (range, attestation) in zip(verified.header.ranges, verified.attestations) where range.last > context.token[range.origin] {
            try db.execute(
                sql: """
                    INSERT INTO tidemark_replicas(replica, max_seq, public_key, head, head_signature) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(replica) DO UPDATE SET max_seq = excluded.max_seq, public_key = excluded.public_key,
                        head = excluded.head, head_signature = excluded.head_signature
                    """,
                arguments: [Data(range.origin.bytes), range.last, Data(range.publicKey), Data(attestation.head), Data(attestation.signature)])
        }
        // The hybrid logical clock moves past every imported timestamp, so later local writes order after them.
        let state = try Sealer.State.fetch(db)
        let last = try Sealer.lastChangeID(db)
        try db.execute(
            sql: "UPDATE tidemark_state SET clock = ?, sealed_through = ? WHERE id = 1",
            arguments: [max(state.clock, newestClock).packed, max(state.sealedThrough, last)])
        for table in store.trackedTables { try CaptureTriggers.install(table, in: db) }
        return Store.ImportSummary(
            path: path, sender: verified.header.senderName, appliedTransactions: applied.transactions,
            appliedChanges: applied.changes, skippedTransactions: skipped, header: verified.header)
    }

    /// Applies one change to the user's table.
    private func write(_ change: History.Change) throws {
        let table = context.tables[change.table]!
        let t = table.name.quotedDatabaseIdentifier
        let keyClause = change.key.map { "\($0.name.quotedDatabaseIdentifier) = ?" }.joined(separator: " AND ")
        let keyValues = change.key.map(\.value)
        switch change.type {
        case .insert:
            let names = change.values.map(\.name.quotedDatabaseIdentifier)
            let keyNames = Set(change.key.map(\.name))
            let updates = change.values.filter { !keyNames.contains($0.name) }.map {
                "\($0.name.quotedDatabaseIdentifier) = excluded.\($0.name.quotedDatabaseIdentifier)"
            }
            let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET " + updates.joined(separator: ", ")
            let sql = """
                INSERT INTO \(t)(\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))
                ON CONFLICT(\(change.key.map(\.name.quotedDatabaseIdentifier).joined(separator: ", "))) \(conflict)
                """
            try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(change.values.map(\.value)))
        case .update:
            let sets = change.values.map { "\($0.name.quotedDatabaseIdentifier) = ?" }.joined(separator: ", ")
            try db.cachedStatement(sql: "UPDATE \(t) SET \(sets) WHERE \(keyClause)")
                .execute(arguments: StatementArguments(change.values.map(\.value) + keyValues))
        case .delete:
            try db.cachedStatement(sql: "DELETE FROM \(t) WHERE \(keyClause)").execute(arguments: StatementArguments(keyValues))
        }
    }

    /// Records one change in history, mapping column names to this store's column positions.
    private func record(_ change: History.Change) throws -> Int64 {
        let table = context.tables[change.table]!
        var values = [SQLValue](repeating: .null, count: table.columns.count)
        var mask: Int64 = 0
        let carried: [History.Column]
        switch change.type {
        case .insert, .update: carried = change.key + change.values
        case .delete: carried = change.tombstone ?? change.key
        }
        for column in carried {
            guard let i = table.index(of: column.name) else { continue }
            values[i] = column.value
            mask |= 1 << Int64(i)
        }
        let op: Bookkeeping.Op = change.type == .insert ? .insert : change.type == .update ? .update : .delete
        let columns = table.columns.indices.map(Bookkeeping.valueColumn).joined(separator: ", ")
        let placeholders = Array(repeating: "?", count: table.columns.count + 3).joined(separator: ", ")
        try db.cachedStatement(sql: "INSERT INTO tidemark_changes(table_id, op, mask, \(columns)) VALUES (\(placeholders))")
            .execute(arguments: StatementArguments([table.id, op.rawValue, mask] as [any DatabaseValueConvertible] + values))
        return db.lastInsertedRowID
    }
}
