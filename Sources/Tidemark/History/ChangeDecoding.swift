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
        decode(tableID: row[0], opCode: row[1], mask: row[2], generation: row[3] ?? 0) { SQLValue(row[4 + $0] as DatabaseValue) }
    }

    /// Decodes the current row of a raw statement selected as `table_id, op, mask, gen, c0, c1, …`.
    func decode(_ statement: RawStatement) -> History.Change? {
        decode(tableID: statement.int64(0), opCode: statement.int64(1), mask: statement.int64(2), generation: statement.int64(3)) {
            statement.value(Int32(4 + $0))
        }
    }

    private func decode(tableID: Int64, opCode: Int64, mask: Int64, generation: Int64, value: (Int) -> SQLValue) -> History.Change? {
        guard let table = tables[tableID], let op = Bookkeeping.Op(rawValue: opCode), op != .marker else { return nil }
        func column(_ i: Int) -> History.Column { History.Column(table.columns[i], value(i)) }
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
