import GRDB
import TidemarkCore

/// Turns rows of `tidemark_changes` into `History.Change` values.
struct ChangeDecoder {
    let tables: [Int64: TrackedTable]

    init(tables: [TrackedTable]) {
        self.tables = Dictionary(uniqueKeysWithValues: tables.map { ($0.id, $0) })
    }

    /// Decodes one row selected as `table_id, op, mask, gen, c0, c1, …`.
    func decode(_ row: Row) throws -> History.Change? {
        let tableID: Int64 = row[0]
        let opCode: Int64 = row[1]
        let mask: Int64 = row[2]
        let generation: Int64 = row[3] ?? 0
        guard let table = tables[tableID], let op = Bookkeeping.Op(rawValue: opCode), op != .marker else { return nil }
        func column(_ i: Int) -> History.Column { History.Column(table.columns[i], SQLValue(row[4 + i] as DatabaseValue)) }
        let key = table.keyIndexes.map(column)
        let carried = table.columns.indices.filter { mask & (1 << Int64($0)) != 0 }
        switch op {
        case .insert:
            return History.Change(type: .insert, table: table.name, key: key, values: carried.map(column), generation: generation)
        case .update:
            let updated = carried.filter { !table.keyIndexes.contains($0) }
            return History.Change(type: .update, table: table.name, key: key, values: updated.map(column), generation: generation)
        case .delete:
            return History.Change(
                type: .delete, table: table.name, key: key, values: [], tombstone: carried.map(column), generation: generation)
        case .marker:
            return nil
        }
    }

    /// The SELECT list for change rows.
    static func selectList(valueColumns: Int) -> String {
        (["table_id", "op", "mask", "gen"] + (0..<valueColumns).map(Bookkeeping.valueColumn)).joined(separator: ", ")
    }
}
