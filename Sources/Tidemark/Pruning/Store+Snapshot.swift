import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// The DEFLATE level of snapshots (change bundles use the encoder's default, 6).
    static let snapshotCompressionLevel: Int32 = 1

    /// Writes this replica's snapshot into its own subfolder of the exchange folder `transport`
    /// reaches (recorded as `recorded`), replacing the previous one in one step; returns its address.
    /// Returns nil without writing when the snapshot there holds transactions this store lacks (it
    /// was restored from a backup and has not caught up, say): a snapshot is replaced only by a later
    /// one, since others may have removed bundles it held (Protocol/pruning.md §3.4).
    func publishSnapshot(through transport: any ExchangeTransport, recorded: String, key: KeyFile) throws -> String? {
        let mine = replica.id.description
        let exchange = ExchangeFolder(transport)
        let current = ExchangeFolder.File(replica: replica.id, name: ExchangeFolder.snapshotName)
        if try exchange.contains(current.name, of: replica.id),
            let header = (try? exchange.signedHeader(of: current, identity: key.envelopeIdentity)) ?? nil,
            try !currentToken().covers(header.through)
        {
            return nil
        }
        let temporary = transport.temporaryFile(for: mine)
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        // Read before writing: a peer trusted meanwhile is then taken for one that cannot open it.
        let readers = try readersOfASnapshot()
        _ = try exportSnapshot(to: temporary, key: key)
        let size = Self.fileSize(temporary)
        try transport.replace(ExchangeFolder.snapshotName, in: mine, with: temporary)
        try noteWritten(recorded, mine, ExchangeFolder.snapshotName, size: size)
        try noteSnapshotReaders(readers, recorded)
        return transport.address(of: ExchangeFolder.snapshotName, in: mine)
    }

    /// Writes a signed snapshot bundle: every tracked row identity this replica knows, live rows
    /// with their values and per-column clocks, deleted ones as tombstones, and the token the
    /// snapshot brings a receiver to. It lets a replica whose token points into pruned history —
    /// back from retirement, or new — catch up without the deleted history.
    ///
    /// Throws `ExchangeError.rowTooLarge` if a row holds more TEXT and BLOB bytes than a bundle
    /// record may carry; then no file is written. Throws `ExchangeError.cannotWrite` if a file at
    /// `path` is not a bundle: an export replaces only an earlier export.
    ///
    /// When the group encrypts, the file is encrypted for this replica and `peer`, or, without
    /// one, for every trusted peer (Protocol/encryption.md §4).
    public func exportSnapshot(to path: String, key: KeyFile, readableBy peer: Replica.ID? = nil) throws
        -> ExportSummary
    {
        guard key.publicKey == publicKey else { throw ExchangeError.wrongKey(path: key.path) }
        try Self.checkReplaceable(path)
        try checkNotRestored()
        let temporary = FilePaths.folder(of: path) + "/.tmp-\(UUID().uuidString)"
        let sink = try Self.sink(temporary, for: path)
        do {
            // The rows read must be exactly what history up to `through` made, with every own
            // change folded into row metadata. A write by another process between the fold and
            // the read would break that, so the read checks it first and the fold runs again;
            // after a few tries the read runs inside the fold's write transaction.
            var summary: ExportSummary?
            for _ in 0..<3 where summary == nil {
                try sealForeignWrites()
                try mappingErrors { try database.write { db in try LocalFold(db: db, store: self).run() } }
                summary = try mappingErrors {
                    try database.read { db in
                        try Self.isSettled(db)
                            ? try writeSnapshot(db, into: sink, path: path, key: key, for: peer) : nil
                    }
                }
            }
            if summary == nil {
                summary = try mappingErrors {
                    try database.write { db in
                        _ = try sealForeign(db)
                        try LocalFold(db: db, store: self).run()
                        return try writeSnapshot(db, into: sink, path: path, key: key, for: peer)
                    }
                }
            }
            guard var written = summary else {
                throw StoreError.database(path: self.path, message: "the snapshot was not written")
            }
            try sink.close()
            written.bytes = sink.bytesWritten
            try FileManager.default.moveItemReplacing(at: temporary, to: path)
            return written
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw ExchangeError.exporting(error, to: path)
        }
    }

    /// Whether every own transaction is folded and no foreign write is waiting to be sealed: the
    /// rows then are exactly what the store's history made.
    static func isSettled(_ db: Database) throws -> Bool {
        let state = try ReplicaState.fetch(db)
        let lastChange = try Sealer.lastChangeID(db)
        return state.foldedSequence == state.sequence && state.sealedThrough >= lastChange
    }

    /// Encodes every row state into `sink` as a signed snapshot bundle.
    private func writeSnapshot(
        _ db: Database, into sink: ExchangeSink, path: String, key: KeyFile, for peer: Replica.ID?
    ) throws
        -> ExportSummary
    {
        try sink.encrypt(for: try envelopeRecipients(db, for: peer))
        let through = try Self.currentToken(db)
        let last = try ReplicaState.fetch(db).lastTimestamp
        let header = BundleHeader(
            kind: .snapshot, senderName: replica.name,
            created: HLCTimestamp.next(after: last, now: options.clock.nowMilliseconds()) ?? last,
            since: .zero, through: through,
            tables: replicatedTables.map {
                BundleHeader.TableSchema(name: $0.name, keyColumns: $0.keyColumns, columns: $0.columns)
            },
            ranges: [], lineage: try SchemaLineage.fetch(db), floors: try floors(db))
        // A snapshot is rewritten whenever a prune removes bundles, and its size is the
        // state's, not the history's: the fastest DEFLATE level keeps that cheap.
        var encoder = try BundleEncoder(
            sink: sink, signingKey: key.privateKey, header: header, compressionLevel: Self.snapshotCompressionLevel)
        var rows = 0
        let origins = OriginNumbers(db: db)
        // Live rows with each table's parents before it, then tombstones with children first
        // (Protocol/pruning.md §5.1).
        let order = try SnapshotOrder.parentsFirst(replicatedTables, in: db)
        for (tables, living) in [(order, true), (order.reversed(), false)] {
            for table in tables {
                rows += try SnapshotReader(db: db, table: table, origins: origins).readAll(living: living) {
                    try encoder.add($0)
                }
            }
        }
        _ = try encoder.finish { _, _, _ in preconditionFailure("a snapshot has no origin ranges") }
        return ExportSummary(
            path: path, since: .zero, through: through, transactionCount: 0, changeCount: rows, bytes: 0,
            kind: .snapshot)
    }
}

extension Store {
    /// The generation floors a snapshot carries, by today's table names (Protocol/pruning.md §6.3).
    fileprivate func floors(_ db: Database) throws -> [GenerationFloor] {
        let floors = try Tombstones.floors(db)
        return replicatedTables.compactMap { table in
            floors[table.id].map { GenerationFloor(table: table.name, floor: $0) }
        }
    }
}

/// Reads one tracked table's row states: metadata joined with the row's current values, in one
/// pass over the row metadata in key order.
struct SnapshotReader {
    let db: Database
    let table: TrackedTable
    let origins: OriginNumbers

    /// Calls `body` with each row state of a live row (`living`) or each tombstone, in key order;
    /// returns how many.
    func readAll(living: Bool, _ body: (RowState) throws -> Void) throws -> Int {
        let store = RowMetadataStore(table: table, origins: origins, digests: nil)
        let keys = table.keyIndexes.indices.map { "m.k\($0)" }
        let metadataColumns = store.selectedColumns(qualifiedBy: "m.")
        // The same match as reading the row by key (`key = ?`): the unary `+` takes away the
        // metadata column's affinity, so the key column's own affinity applies to the stored key
        // as it does to a bound value (an integer key matches the text a TEXT key column made of
        // it). A row whose key is NULL is never found.
        let match = zip(table.keyColumns, keys).map { "r.\($0.quotedIdentifier) = +\($1)" }
        let statement = try RawStatement(
            db,
            sql:
                "SELECT \((keys + metadataColumns + table.columns.map { "r.\($0.quotedIdentifier)" }).joined(separator: ", ")) "
                + "FROM \(Bookkeeping.rowMetadataTable(table)) AS m LEFT JOIN \(table.name.quotedIdentifier) AS r "
                + "ON \(match.joined(separator: " AND ")) WHERE m.gen % 2 = \(living ? 1 : 0) "
                + "ORDER BY \(keys.joined(separator: ", "))")
        let metadataAt = Int32(keys.count)
        let valuesAt = metadataAt + Int32(metadataColumns.count)
        // Matched on a key column, that column is not NULL when the row is present.
        let presentAt = valuesAt + Int32(table.keyIndexes[0])
        var count = 0
        while try statement.step() {
            let key = keys.indices.map { statement.value(Int32($0)) }
            let metadata = try store.metadata(statement, at: metadataAt)
            let keyColumns = zip(table.keyColumns, key).map { History.Column($0, $1) }
            var cells: [RowState.Cell] = []
            if metadata.isAlive {
                // A row its metadata calls alive but that a foreign-key action removed is left out;
                // the receiver settles it when a change reaches it.
                guard !statement.isNull(presentAt) else { continue }
                cells.reserveCapacity(table.columns.count - keys.count)
                for i in table.columns.indices where !table.keyIndexes.contains(i) {
                    cells.append(
                        RowState.Cell(
                            name: table.columns[i], value: statement.value(valuesAt + Int32(i)),
                            clock: metadata.clocks[i]))
                }
            }
            try body(RowState(table: table.name, key: keyColumns, generation: metadata.generation, cells: cells))
            count += 1
        }
        return count
    }
}
