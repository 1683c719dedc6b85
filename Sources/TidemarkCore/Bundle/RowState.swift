/// One row identity's merge state, as a snapshot bundle carries it (Protocol/bundle.md §4.4): its
/// generation and, while it lives, every non-key column with the clock of the write that set it.
/// A tombstone is a row state with an even generation and no columns.
public struct RowState: Sendable, Hashable {
    /// One column's value and the clock of the write that set it.
    public struct Cell: Sendable, Hashable {
        /// The column name.
        public var name: String
        /// The value.
        public var value: SQLValue
        /// The clock of the write that set it; nil when no write of the current life set it.
        public var clock: MergeClock?

        /// Creates a cell.
        public init(name: String, value: SQLValue, clock: MergeClock?) {
            self.name = name
            self.value = value
            self.clock = clock
        }
    }

    /// The table.
    public var table: String
    /// The key columns in key order.
    public var key: [History.Column]
    /// The causal length: odd alive, even deleted.
    public var generation: Int64
    /// Non-key columns, sorted by name (bytewise UTF-8); empty for a tombstone.
    public var cells: [Cell]

    /// Creates a row state; cells are sorted canonically.
    public init(table: String, key: [History.Column], generation: Int64, cells: [Cell]) {
        self.table = table
        self.key = key
        self.generation = generation
        self.cells = cells.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// Creates a row state from cells the caller has already checked to be strictly ascending by
    /// name, as the decoder does for every record it reads.
    init(table: String, key: [History.Column], generation: Int64, ascendingCells cells: [Cell]) {
        self.table = table
        self.key = key
        self.generation = generation
        self.cells = cells
    }
}

extension RecordEncoding {
    /// §4.4: one row state.
    static func rowState(_ r: RowState, _ out: inout [UInt8]) {
        string(r.table, &out)
        varint(UInt64(r.generation), &out)
        varint(UInt64(r.key.count), &out)
        for k in r.key {
            string(k.name, &out)
            value(k.value, &out)
        }
        varint(UInt64(r.cells.count), &out)
        for cell in r.cells {
            string(cell.name, &out)
            value(cell.value, &out)
            if let clock = cell.clock {
                out.append(1)
                varint(UInt64(bitPattern: clock.timestamp.packed), &out)
                clock.origin.append(to: &out)
            } else {
                out.append(0)
            }
        }
        out.append(0)  // attribute count
    }
}
