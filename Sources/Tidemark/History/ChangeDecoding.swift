import GRDB
import TidemarkCore

/// The columns of `tidemark_changes` a change is read with: `table_id, op, gen`, the mask words,
/// then the value columns `c0, c1, …`.
struct ChangeLayout {
    let maskWords: Int
    let valueColumns: Int

    init(_ db: Database) throws {
        maskWords = try Bookkeeping.maskColumnCount(db)
        valueColumns = try Bookkeeping.valueColumnCount(db)
    }

    /// The SELECT list, in the order above.
    var selectList: String {
        (["table_id", "op", "gen"] + (0..<maskWords).map(Bookkeeping.maskColumn)
            + (0..<valueColumns).map(Bookkeeping.valueColumn))
            .joined(separator: ", ")
    }
    /// The number of selected columns.
    var count: Int { 3 + maskWords + valueColumns }
    /// The result index of a slot's value.
    func valueIndex(_ slot: Int) -> Int { 3 + maskWords + slot }
    /// The mask of the current row of a statement selected with `selectList`.
    func mask(_ statement: RawStatement) -> ColumnMask {
        ColumnMask(words: (0..<maskWords).map { statement.int64(Int32(3 + $0)) })
    }
}

/// Turns rows of `tidemark_changes` into `History.Change` values, naming tables and columns as the
/// schema version the transaction was written under did (`SchemaNaming`).
struct ChangeDecoder {
    let naming: SchemaNaming
    let layout: ChangeLayout

    /// A decoder naming changes with `naming`, or, when nil, the store's current naming.
    init(_ db: Database, store: Store, naming: SchemaNaming? = nil) throws {
        self.naming =
            try naming ?? SchemaNaming(registrations: store.registrations.all, lineage: SchemaLineage.fetch(db))
        layout = try ChangeLayout(db)
    }

    /// The SELECT list for change rows.
    var selectList: String { layout.selectList }

    /// Decodes one row selected with `selectList`, of a transaction written under `position`;
    /// `folded` is false for one of this replica's transactions the fold has not reached, whose
    /// changes have no generation yet (0).
    func decode(_ row: Row, position: Int, folded: Bool = true) -> History.Change? {
        let mask = ColumnMask(words: (0..<layout.maskWords).map { (row[3 + $0] as Int64?) ?? 0 })
        return decode(
            tableID: row[0], opCode: row[1], mask: mask, generation: folded ? row[2] as Int64? : 0, position: position
        ) {
            SQLValue(row[layout.valueIndex($0)] as DatabaseValue)
        }
    }

    /// Decodes the current row of a raw statement selected with `selectList`, of a folded
    /// transaction.
    func decode(_ statement: RawStatement, position: Int) -> History.Change? {
        decode(
            tableID: statement.int64(0), opCode: statement.int64(1), mask: layout.mask(statement),
            generation: statement.isNull(2) ? nil : statement.int64(2), position: position
        ) {
            statement.value(Int32(layout.valueIndex($0)))
        }
    }

    /// `generation` is the stored one: nil stands for the change kind's default
    /// (`Bookkeeping.Op.defaultGeneration`).
    private func decode(
        tableID: Int64, opCode: Int64, mask: ColumnMask, generation stored: Int64?, position: Int,
        value: (Int) -> SQLValue
    )
        -> History.Change?
    {
        guard let table = naming.tables(at: position)[tableID], let op = Bookkeeping.Op(rawValue: opCode), op != .marker
        else { return nil }
        let generation = stored ?? op.defaultGeneration
        let key = table.keySlots.map { History.Column(table.columns[$0] ?? "", value($0)) }
        // Every column the change carries, the key included, in slot order.
        let carried = table.columns.filter { mask.contains($0.key) }.sorted { $0.key < $1.key }
        let column = { (slot: Int, name: String) in History.Column(name, value(slot)) }
        switch op {
        case .insert:
            return History.Change(
                type: .insert, table: table.name, key: key, values: carried.map(column), generation: generation)
        case .update:
            let updated = carried.filter { !table.keySlots.contains($0.key) }
            return History.Change(
                type: .update, table: table.name, key: key, values: updated.map(column), generation: generation)
        case .delete:
            return History.Change(
                type: .delete, table: table.name, key: key, values: [], tombstone: carried.map(column),
                generation: generation)
        case .marker:
            return nil
        }
    }
}
