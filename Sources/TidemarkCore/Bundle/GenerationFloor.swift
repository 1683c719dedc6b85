/// A table's generation floor, as a snapshot carries it (Protocol/bundle.md §3.3, pruning.md §6.3):
/// the greatest generation of a tombstone its sender dropped or learned of from a snapshot. A row
/// life started where the receiver holds no metadata begins above it.
public struct GenerationFloor: Sendable, Hashable {
    /// The table, as the snapshot's newest schema version names it.
    public var table: String
    /// An even generation, at least 2.
    public var floor: Int64

    /// Creates a floor.
    public init(table: String, floor: Int64) {
        self.table = table
        self.floor = floor
    }

    /// The header attribute's data: the entry count, then per entry the table name and the floor
    /// (varint), in ascending bytewise order of name.
    static func encoded(_ floors: [GenerationFloor]) -> [UInt8] {
        var out: [UInt8] = []
        let sorted = floors.sorted { $0.table.utf8.lexicographicallyPrecedes($1.table.utf8) }
        RecordEncoding.varint(UInt64(sorted.count), &out)
        for entry in sorted {
            RecordEncoding.string(entry.table, &out)
            RecordEncoding.varint(UInt64(entry.floor), &out)
        }
        return out
    }

    /// Reads the attribute's data; throws `BundleHeader.AttributeDefect` for data that breaks bundle.md §3.3,
    /// and the reader's own errors where it ends early.
    static func decode(_ r: inout PayloadReader) throws -> [GenerationFloor] {
        func bad(_ why: String) -> BundleHeader.AttributeDefect {
            BundleHeader.AttributeDefect(why: "generation floors: \(why)")
        }
        let count = try r.varint()
        guard count >= 1, count <= UInt64(BundleFormat.maxHeaderEntries) else { throw bad("1 to 4096 tables") }
        var floors: [GenerationFloor] = []
        for _ in 0..<count {
            let name = try r.string()
            guard !name.isEmpty else { throw bad("empty table name") }
            if let prior = floors.last, !prior.table.utf8.lexicographicallyPrecedes(name.utf8) {
                throw bad("tables not in ascending order")
            }
            let floor = try r.varint()
            guard floor >= 2, floor % 2 == 0 else { throw bad("a floor must be an even generation of at least 2") }
            guard floor <= UInt64(Int64.max) else { throw bad("a floor must be below 2^63") }
            floors.append(GenerationFloor(table: name, floor: Int64(floor)))
        }
        return floors
    }
}
