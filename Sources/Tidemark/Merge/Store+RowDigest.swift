import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// The digest of this replica's replicated rows at its current token (Protocol/exchange.md §8),
    /// the one its next watermark carries. Reads only: a table whose digest is not known (after an
    /// upgrade, a migration, or a schema change by a client) or that own writes not yet folded into
    /// row metadata touched is counted by a scan.
    public func rowDigest() throws -> (digest: RowDigest, token: History.Token) {
        try sealForeignWritesBeforeReading()
        return try mappingErrors {
            try database.read { db in
                (try Self.rowDigestReading(db, tables: replicatedTables, own: replica.id), try Self.currentToken(db))
            }
        }
    }

    /// The digest of the rows as they are, without writing: the kept digest of each table the
    /// fold is up to date with, and a count of every other (see `rowDigest()`).
    static func rowDigestReading(_ db: Database, tables: [TrackedTable], own: Replica.ID) throws -> RowDigest {
        let trusted = try RowDigests.trusted(db)
        let unfolded = Set(
            try Int64.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT c.table_id FROM tidemark_transactions AS t
                    JOIN tidemark_changes AS c ON c.id BETWEEN t.first_change AND t.last_change
                    WHERE t.replica = ? AND t.seq > ?
                    """, arguments: [Data(own.bytes), try ReplicaState.fetch(db).foldedSequence]))
        return RowDigest(
            try tables.map { table in
                if trusted, !unfolded.contains(table.id), let kept = try RowDigests.kept(table, db) { return kept }
                return try RowCount(db: db, table: table, fixesHashes: false).run().entry(table)
            })
    }

    /// The digest of this replica's replicated rows (Protocol/exchange.md §8), counting again, by a
    /// scan, each table whose digest is not known, and keeping what it counted. Runs in a write
    /// access, after the fold, so that it describes the rows at the current token.
    static func rowDigest(_ db: Database, tables: [TrackedTable]) throws -> RowDigest {
        if try !RowDigests.trusted(db) {
            // A client changed the schema: it may have removed the capture triggers, written, and
            // put them back. Count every table again.
            try RowDigests.forgetAll(db)
            try RowDigests.trust(db)
        }
        return RowDigest(
            try tables.map { table in
                if let kept = try RowDigests.kept(table, db) { return kept }
                return try RowDigests.keep(RowCount(db: db, table: table, fixesHashes: true).run(), of: table, db)
            })
    }

    /// Runs `body`, a schema change Tidemark makes itself (a migration, capture triggers made
    /// again), without making the row digests look untrustworthy: when they were trusted
    /// before, they stay so.
    static func ownSchemaChange<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        let trusted = try RowDigests.trusted(db)
        let result = try body()
        if trusted { try RowDigests.trust(db) }
        return result
    }
}

/// Counts one table's rows for its digest and, when it `fixesHashes`, puts each row's hash into its
/// metadata where the stored one differs: a row changed behind Tidemark's back from then on
/// counts as it is.
struct RowCount {
    let db: Database
    let table: TrackedTable
    let fixesHashes: Bool

    /// What a count found.
    struct Result {
        var rows: Int64
        var sum: UInt64
        /// Rows with no metadata (written with the capture triggers removed); 0 when the count
        /// does not fix hashes, which does not look.
        var untracked: Int64

        func entry(_ table: TrackedTable) -> RowDigest.Table {
            .init(name: table.name, rows: UInt64(rows), sum: sum)
        }
    }

    func run() throws -> Result {
        let hasher = try RowHasher(table: table, db)
        let quoted = table.name.quotedIdentifier
        let metadata = Bookkeeping.rowMetadataTable(table)
        let keyMatch = table.keyIndexes.indices.map { "k\($0) = ?" }.joined(separator: " AND ")
        let rows = try RawStatement(
            db, sql: "SELECT \(table.columns.map(\.quotedIdentifier).joined(separator: ", ")) FROM \(quoted)")
        var count: Int64 = 0
        var sum: UInt64 = 0
        guard fixesHashes else {
            while try rows.step() {
                count += 1
                sum &+= UInt64(bitPattern: hasher.hash(rows))
            }
            return Result(rows: count, sum: sum, untracked: 0)
        }
        let stored = try RawStatement(db, sql: "SELECT h FROM \(metadata) WHERE \(keyMatch)")
        let setHash = try RawStatement(db, sql: "UPDATE \(metadata) SET h = ? WHERE \(keyMatch)")
        var untracked: Int64 = 0
        while try rows.step() {
            let hash = hasher.hash(rows)
            count += 1
            sum &+= UInt64(bitPattern: hash)
            let key = table.keyIndexes.map { rows.value(Int32($0)) }
            stored.reset()
            try stored.bind(key)
            guard try stored.step() else {
                untracked += 1
                continue
            }
            if stored.optionalInt64(0) != hash {
                setHash.reset()
                try setHash.bind(hash, at: 1)
                try setHash.bind(key, from: 2)
                try setHash.execute()
            }
        }
        // Rows whose metadata has a hash but that are gone.
        let matches = table.keyIndexes.enumerated().map { n, i in
            "t.\(table.columns[i].quotedIdentifier) = m.k\(n)"
        }.joined(separator: " AND ")
        try db.execute(
            sql: """
                UPDATE \(metadata) AS m SET h = NULL
                WHERE h IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(quoted) AS t WHERE \(matches))
                """)
        return Result(rows: count, sum: sum, untracked: untracked)
    }
}
