import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// The digest of this replica's replicated rows at its current token (Protocol/exchange.md §8),
    /// the one its next watermark carries. Reads only: a table whose digest is not known (after an
    /// upgrade, a migration, or a schema change by a client) or that own writes not yet folded into
    /// row metadata touched is counted by a scan.
    public func rowDigest() throws -> (digest: RowDigest, token: History.Token) {
        try sealForeignWrites()
        return try mappingErrors {
            try database.read { db in
                (try Self.rowDigestReading(db, tables: replicatedTables, own: replica.id), try Self.currentToken(db))
            }
        }
    }

    /// The digest of the rows as they are, without writing: the kept digest of each table the
    /// fold is up to date with, and a count of every other (see `rowDigest()`).
    static func rowDigestReading(_ db: Database, tables: [TrackedTable], own: Replica.ID) throws -> RowDigest {
        let trusted = try Bookkeeping.meta(db, Bookkeeping.Meta.digestSchemaVersion) == schemaVersion(db).databaseValue
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
                if trusted, !unfolded.contains(table.id), let kept = try keptDigest(of: table, db) { return kept }
                let count = try RowCount(db: db, table: table, fixesHashes: false).run()
                return .init(name: table.name, rows: UInt64(count.rows), sum: count.sum)
            })
    }

    /// The digest of this replica's replicated rows (Protocol/exchange.md §8), counting again, by a
    /// scan, each table whose digest is not known, and keeping what it counted. Runs in a write
    /// access, after the fold, so that it describes the rows at the current token.
    static func rowDigest(_ db: Database, tables: [TrackedTable]) throws -> RowDigest {
        if try Bookkeeping.meta(db, Bookkeeping.Meta.digestSchemaVersion) != schemaVersion(db).databaseValue {
            // A client changed the schema: it may have removed the capture triggers, written, and
            // put them back. Count every table again.
            try RowDigests.forgetAll(db)
            try Bookkeeping.setMeta(db, Bookkeeping.Meta.digestSchemaVersion, schemaVersion(db))
        }
        return RowDigest(
            try tables.map { table in
                if let kept = try keptDigest(of: table, db) { return kept }
                let count = try RowCount(db: db, table: table, fixesHashes: true).run()
                try db.execute(
                    sql: "INSERT INTO tidemark_digests(table_id, rows, sum, untracked) VALUES (?, ?, ?, ?)",
                    arguments: [table.id, count.rows, Int64(bitPattern: count.sum), count.untracked])
                return .init(name: table.name, rows: UInt64(count.rows), sum: count.sum)
            })
    }

    /// The digest kept for `table`, if it is known.
    private static func keptDigest(of table: TrackedTable, _ db: Database) throws -> RowDigest.Table? {
        try Row.fetchOne(db, sql: "SELECT rows, sum FROM tidemark_digests WHERE table_id = ?", arguments: [table.id])
            .map { .init(name: table.name, rows: UInt64($0[0] as Int64), sum: UInt64(bitPattern: $0[1])) }
    }

    /// Runs `body`, a schema change Tidemark makes itself (capture triggers lifted for an import,
    /// a table tracked, a migration), without making the row digests look untrustworthy: when they
    /// were trusted before, they stay so.
    static func ownSchemaChange<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        let trusted =
            try Bookkeeping.meta(db, Bookkeeping.Meta.digestSchemaVersion) == schemaVersion(db).databaseValue
        let result = try body()
        if trusted { try Bookkeeping.setMeta(db, Bookkeeping.Meta.digestSchemaVersion, schemaVersion(db)) }
        return result
    }

    /// SQLite's schema cookie, which every schema change, by any client, increments.
    private static func schemaVersion(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
    }
}

/// Counts one table's rows for its digest and, when it `fixesHashes`, puts each row's hash into its
/// metadata where the stored one differs: a row changed behind Tidemark's back from then on
/// counts as it is.
struct RowCount {
    let db: Database
    let table: TrackedTable
    let fixesHashes: Bool

    /// The row count, the sum of the hashes, and how many rows have no metadata (written with the
    /// capture triggers removed; 0 when it does not fix hashes, which does not look).
    func run() throws -> (rows: Int64, sum: UInt64, untracked: Int64) {
        let hasher = try RowHasher(table: table, db)
        let quoted = table.name.quotedDatabaseIdentifier
        let metadata = Bookkeeping.rowMetadataTable(table)
        let keyMatch = table.keyIndexes.indices.map { "k\($0) = ?" }.joined(separator: " AND ")
        let rows = try RawStatement(
            db, sql: "SELECT \(table.columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")) FROM \(quoted)")
        var count: Int64 = 0
        var sum: UInt64 = 0
        guard fixesHashes else {
            while try rows.step() {
                count += 1
                sum &+= UInt64(bitPattern: hasher.hash(rows))
            }
            return (count, sum, 0)
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
            "t.\(table.columns[i].quotedDatabaseIdentifier) = m.k\(n)"
        }.joined(separator: " AND ")
        try db.execute(
            sql: """
                UPDATE \(metadata) AS m SET h = NULL
                WHERE h IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(quoted) AS t WHERE \(matches))
                """)
        return (count, sum, untracked)
    }
}
