import Crypto

/// Reading the record stream (§4): row states of a snapshot, transactions and their changes.
extension BundleDecoder {
    /// Reads the next row state of a snapshot bundle (§4.4), or nil after the last.
    public func nextRowState() throws -> RowState? {
        if position == chunk.count { guard try refill() else { return nil } }
        guard header.kind == .snapshot else { throw fail(.unexpectedRecord("a row state outside a snapshot")) }
        let (table, index) = try headerEntry(of: try internedName(at: 0))
        let generation = try varint()
        guard generation >= 1, generation <= UInt64(Int64.max) else { throw fail(.badGeneration(generation)) }
        let key = try keyColumns(of: table, index)
        let cellCount = try columnCount()
        guard generation % 2 == 1 || cellCount == 0 else {
            throw fail(.columnsNotCanonical("a tombstone carries no columns"))
        }
        var cells: [RowState.Cell] = []
        cells.reserveCapacity(Int(cellCount))
        var rank = 0
        // The name before, kept apart: reading it from the last cell copied the whole cell.
        var previous: String?
        for place in 0..<Int(cellCount) {
            let cellName = try internedName(at: 1 + key.count + place)
            let cellValue = try value()
            var clock: MergeClock?
            switch try byte() {
            case 0: break
            case 1:
                let packed = try varint()
                clock = MergeClock(timestamp: HLCTimestamp(packed: Int64(bitPattern: packed)), origin: try origin())
            case let b: throw fail(.badPresenceByte(b))
            }
            rank = try checkColumn(cellName, after: (previous, rank), of: table, index)
            previous = cellName.string
            cells.append(RowState.Cell(name: cellName.string, value: cellValue, clock: clock))
        }
        try attributes()
        changeCount += 1
        // `checkColumn` held the names strictly ascending: they need no sorting.
        return RowState(table: table, key: key, generation: Int64(generation), ascendingCells: cells)
    }

    /// Reads the next transaction's header, or nil after the last. The previous transaction's
    /// changes must all have been read.
    public func nextTransaction() throws -> History.TransactionHeader? {
        precondition(open == nil || changesLeft == 0, "read every change before the next transaction")
        if position == chunk.count { guard try refill() else { return nil } }
        guard header.kind == .changes else { throw fail(.unexpectedRecord("a transaction outside a change bundle")) }
        hashedFrom = position
        inRecord = true
        hasherReady = false
        prefix = []
        let start = consumedBefore + position
        let origin = try self.origin()
        guard var chain = chains[origin] else {
            throw BundleError.verification(.transactionOutsideRanges(origin: origin.description, sequence: 0))
        }
        var hasher = SHA256()
        hasher.update(data: chain.head)
        hasher.update(data: prefix)
        txHasher = hasher
        hasherReady = true
        let seq = try varint()
        guard seq <= UInt64(Int64.max) else {
            throw BundleError.record(.numberOutOfRange("sequence number"), offset: start)
        }
        let sequence = Int64(seq)
        guard sequence <= chain.last else {
            throw BundleError.verification(.transactionOutsideRanges(origin: origin.description, sequence: sequence))
        }
        guard chain.done < chain.last, sequence == chain.done + 1 else {
            throw BundleError.verification(
                .sequenceGap(origin: origin.description, expected: chain.done &+ 1, found: sequence))
        }
        let timestamp = HLCTimestamp(packed: Int64(bitPattern: try varint()))
        guard chain.timestamp < timestamp else {
            throw BundleError.verification(.clockNotIncreasing(origin: origin.description, sequence: sequence))
        }
        chain.timestamp = timestamp
        chains[origin] = chain
        let author = try optionalName()
        let context = try optionalName()
        var pid: Int32?
        switch try byte() {
        case 0: break
        case 1:
            let v = try varint()
            guard v <= UInt64(UInt32.max) else { throw fail(.numberOutOfRange("process id")) }
            pid = Int32(bitPattern: UInt32(v))
        case let b: throw fail(.badPresenceByte(b))
        }
        let count = try varint()
        guard count <= UInt64(Int32.max) else { throw fail(.lengthTooLarge(Int(Int32.max))) }
        let head = History.TransactionHeader(
            origin: origin, sequence: sequence, timestamp: timestamp, author: author, contextName: context,
            processID: pid,
            changeCount: Int(count), schemaPosition: header.schemaPosition(of: origin, sequence: sequence))
        open = head
        changesLeft = Int(count)
        if changesLeft == 0 { try closeTransaction() }
        transactionCount += 1
        return head
    }

    /// Reads the next change of the current transaction, or nil when it has no more. Long by
    /// design: the fields of §4.3 in file order, each checked as it is read (§5.3), on the
    /// per-change path where a call per field would cost.
    public func nextChange() throws -> History.Change? {
        guard open != nil, changesLeft > 0 else { return nil }
        let op = try byte()
        let type: History.ChangeType
        switch op {
        case 1: type = .insert
        case 2: type = .update
        case 3: type = .delete
        default: throw fail(.unknownChangeType(op))
        }
        let generation = try varint()
        // §4.3: inserts and updates belong to a living row (odd), deletes end one (even).
        guard generation >= 1, generation <= UInt64(Int64.max), (generation % 2 == 0) == (type == .delete) else {
            throw fail(.badGeneration(generation))
        }
        let (table, index) = try headerEntry(of: try internedName(at: 0))
        let key = try keyColumns(of: table, index)
        let columnCount = try columnCount()
        var columns: [History.Column] = []
        columns.reserveCapacity(Int(columnCount))
        var rank = 0
        var previous: String?
        for place in 0..<Int(columnCount) {
            let name = try internedName(at: 1 + key.count + place)
            let column = History.Column(name.string, try value())
            rank = try checkColumn(name, after: (previous, rank), of: table, index)
            previous = name.string
            columns.append(column)
        }
        if type == .update && columns.isEmpty { throw fail(.columnsNotCanonical("an update changes no column")) }
        try attributes()
        changesLeft -= 1
        changeCount += 1
        if changesLeft == 0 { try closeTransaction() }
        switch type {
        case .insert:
            return History.Change(
                type: .insert, table: table, key: key, values: key + columns, generation: Int64(generation))
        case .update:
            return History.Change(type: .update, table: table, key: key, values: columns, generation: Int64(generation))
        case .delete:
            return History.Change(
                type: .delete, table: table, key: key, values: [], tombstone: key + columns,
                generation: Int64(generation))
        }
    }

    /// The header's entry of a record's table (§4.3, §4.4).
    /// Returns the table's name and the index of its entry.
    private func headerEntry(of table: Name) throws -> (String, Int) {
        guard let index = headerNames.table(table) else {
            throw fail(.columnsNotCanonical("table '\(table.string)' is not in the header"))
        }
        return (table.string, index)
    }

    /// Reads a record's key: its count, then each key column, which must be the table's key columns
    /// as its header entry lists them. Starts the record's count of value bytes.
    private func keyColumns(of table: String, _ index: Int) throws -> [History.Column] {
        let keyCount = try varint()
        guard keyCount >= 1, keyCount <= UInt64(BundleFormat.maxColumns) else {
            throw fail(.tooManyColumns(Int(min(keyCount, 1_000_000))))
        }
        recordValueBytes = 0
        var key: [History.Column] = []
        key.reserveCapacity(Int(keyCount))
        var matches = keyCount == tables[index].keys.count
        for position in 0..<Int(keyCount) {
            let name = try internedName(at: 1 + position)
            matches = matches && headerNames.isKey(name, at: position, of: index)
            key.append(History.Column(name.string, try value()))
        }
        guard matches else {
            throw fail(.columnsNotCanonical("key columns of '\(table)' do not match its header entry"))
        }
        return key
    }

    /// Reads the count of a record's non-key columns.
    private func columnCount() throws -> UInt64 {
        let count = try varint()
        guard count <= UInt64(BundleFormat.maxColumns) else { throw fail(.tooManyColumns(Int(min(count, 1_000_000)))) }
        return count
    }

    /// Checks a record's non-key column: named after the one before it (strictly ascending), and one
    /// of the table's non-key columns in the header (entry `index`). `previous` is the column
    /// before it and its rank (0 for none); returns this column's rank.
    private func checkColumn(_ column: Name, after previous: (name: String?, rank: Int), of table: String, _ index: Int)
        throws -> Int
    {
        // Ranks follow bytewise order: a greater rank is a name after the previous one.
        if let rank = headerNames.rank(column, in: index), rank > previous.rank { return rank }
        if let name = previous.name, !name.utf8.lexicographicallyPrecedes(column.string.utf8) {
            throw fail(.columnsNotCanonical("column names not strictly ascending"))
        }
        throw fail(
            .columnsNotCanonical("column '\(column.string)' of '\(table)' is a key column or not in the header"))
    }

    func closeTransaction() throws {
        let head = open!
        try transactionAttributes(head)
        txHasher.update(data: chunk[hashedFrom..<position])
        let hash = Array(txHasher.finalize())
        chains[head.origin]!.head = hash
        chains[head.origin]!.done = head.sequence
        lastCompleted = (head, hash)
        open = nil
        inRecord = false
    }

    /// Reads every remaining record, whatever the bundle's kind, so that `finish()` can verify.
    public func skipRecords() throws {
        if header.kind == .snapshot {
            while try nextRowState() != nil {}
        } else {
            while try nextTransaction() != nil {
                while try nextChange() != nil {}
            }
        }
    }
}
