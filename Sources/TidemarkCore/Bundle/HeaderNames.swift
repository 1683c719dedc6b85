/// What the names in a bundle's records are in its header (§4.3, §4.4): which header table a name
/// is, whether it is a table's key column at a position, and a non-key column's rank among that
/// table's non-key columns in bytewise order. Each interned name is compared with the header once
/// per table and remembered by its number; a change then costs a few array reads instead of byte
/// comparisons of every name it carries. Names that were not interned, and names in tables past the
/// first `rememberedTables` of the header, are compared each time: what is remembered stays near a
/// megabyte at most, whatever a bundle's header lists.
struct HeaderNames {
    /// How many of the header's tables have their names' ranks remembered.
    static let rememberedTables = 64

    private let tables: [BundleDecoder.TableLookup]
    /// Per table, its non-key columns sorted bytewise: a column's rank is its index here plus one.
    private let ranked: [[[UInt8]]]
    /// By name number: the index of the header table plus one, -1 when no table has that name,
    /// 0 not yet known.
    private var tableOf: [Int32] = []
    /// Per remembered table, by name number: the column's rank, -1 when it is no non-key column, 0
    /// not yet known.
    private var ranks: [[Int32]]
    /// Per remembered table, the number of the name of each key column, -1 until it was read.
    private var keys: [[Int]]

    init(_ tables: [BundleDecoder.TableLookup]) {
        self.tables = tables
        ranked = tables.map { lookup in
            lookup.columns.filter { column in !lookup.keys.contains(column) }.sorted {
                $0.lexicographicallyPrecedes($1)
            }
        }
        ranks = Array(repeating: [], count: min(tables.count, Self.rememberedTables))
        keys = tables.prefix(Self.rememberedTables).map { Array(repeating: -1, count: $0.keys.count) }
    }

    /// The index of the header table named `name`, or nil.
    mutating func table(_ name: BundleDecoder.Name) -> Int? {
        guard name.id >= 0 else { return tables.firstIndex { $0.name.elementsEqual(name.string.utf8) } }
        if name.id >= tableOf.count { tableOf += repeatElement(0, count: name.id + 1 - tableOf.count) }
        if tableOf[name.id] == 0 {
            tableOf[name.id] =
                (tables.firstIndex { $0.name.elementsEqual(name.string.utf8) }).map { Int32($0 + 1) } ?? -1
        }
        return tableOf[name.id] > 0 ? Int(tableOf[name.id] - 1) : nil
    }

    /// Whether `name` is the key column at `position` of the header table `table`.
    mutating func isKey(_ name: BundleDecoder.Name, at position: Int, of table: Int) -> Bool {
        guard position < tables[table].keys.count else { return false }
        let remembered = name.id >= 0 && table < keys.count
        if remembered, keys[table][position] >= 0 { return keys[table][position] == name.id }
        guard tables[table].keys[position].elementsEqual(name.string.utf8) else { return false }
        if remembered { keys[table][position] = name.id }
        return true
    }

    /// The rank of `name` among the non-key columns of the header table `table` in bytewise order
    /// (from 1), or nil when it is none of them.
    mutating func rank(_ name: BundleDecoder.Name, in table: Int) -> Int? {
        guard name.id >= 0, table < ranks.count else { return rankByBytes(name.string, in: table) }
        if name.id >= ranks[table].count {
            ranks[table] += repeatElement(0, count: name.id + 1 - ranks[table].count)
        }
        if ranks[table][name.id] == 0 { ranks[table][name.id] = Int32(rankByBytes(name.string, in: table) ?? -1) }
        return ranks[table][name.id] > 0 ? Int(ranks[table][name.id]) : nil
    }

    private func rankByBytes(_ name: String, in table: Int) -> Int? {
        ranked[table].firstIndex { $0.elementsEqual(name.utf8) }.map { $0 + 1 }
    }
}
