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
    /// Whether a change's columns come in ascending bytewise order of name, as the bundle encoding
    /// writes them (which then needs no sort), rather than in the table's order.
    let inNameOrder: Bool

    /// A decoder naming changes with `naming`, or, when nil, the store's current naming.
    init(_ db: Database, store: Store, naming: SchemaNaming? = nil, inNameOrder: Bool = false) throws {
        self.naming =
            try naming ?? SchemaNaming(registrations: store.registrations.all, lineage: SchemaLineage.fetch(db))
        layout = try ChangeLayout(db)
        self.inNameOrder = inNameOrder
    }

    /// The SELECT list for change rows.
    var selectList: String { layout.selectList }

    /// Decodes the current row of a raw statement selected with `selectList`, of a transaction
    /// written under `position`; `folded` is false for one of this replica's transactions the fold
    /// has not reached, whose changes have no generation yet (0). Values are read as stored, text
    /// with every byte (GRDB's rows cut text at a NUL character).
    /// With `whole`, a change that carries a column its version does not name is nil too: a
    /// bundle or a chain hash must carry the change whole or not at all.
    func decode(_ statement: RawStatement, position: Int, folded: Bool = true, whole: Bool = false)
        -> History.Change?
    {
        decode(
            tableID: statement.int64(0), opCode: statement.int64(1), mask: layout.mask(statement),
            generation: !folded ? 0 : statement.isNull(2) ? nil : statement.int64(2), position: position,
            whole: whole
        ) {
            statement.value(Int32(layout.valueIndex($0)))
        }
    }

    /// `generation` is the stored one: nil stands for the change kind's default
    /// (`Bookkeeping.Op.defaultGeneration`).
    private func decode(
        tableID: Int64, opCode: Int64, mask: ColumnMask, generation stored: Int64?, position: Int, whole: Bool,
        value: (Int) -> SQLValue
    )
        -> History.Change?
    {
        guard let op = Bookkeeping.Op(rawValue: opCode), op != .marker,
            let plan = plans.plan(for: Shape(position: position, tableID: tableID, mask: mask), naming),
            !whole || plan.namesEveryColumn
        else { return nil }
        let generation = stored ?? op.defaultGeneration
        func columns(_ list: [Plans.Plan.Column]) -> [History.Column] {
            list.map { History.Column($0.name, value($0.slot)) }
        }
        let key = columns(plan.key)
        let carried = inNameOrder ? plan.carriedByName : plan.carried
        switch op {
        case .insert:
            return History.Change(
                type: .insert, table: plan.table, key: key, values: columns(carried), generation: generation)
        case .update:
            return History.Change(
                type: .update, table: plan.table, key: key,
                values: columns(inNameOrder ? plan.updatedByName : plan.updated), generation: generation)
        case .delete:
            return History.Change(
                type: .delete, table: plan.table, key: key, values: [], tombstone: columns(carried),
                generation: generation)
        case .marker:
            return nil
        }
    }

    /// What the decoder has worked out of the naming, by the shape of the changes it was for.
    private let plans = Plans()
}

/// The shape of a change row: its schema version's position, its table and its mask. Changes of
/// one shape name the same columns, in the same order.
private struct Shape: Hashable {
    var position: Int
    var tableID: Int64
    var mask: [Int64]

    init(position: Int, tableID: Int64, mask: ColumnMask) {
        self.position = position
        self.tableID = tableID
        self.mask = mask.words
    }
}

/// The names and slots a change of one shape is decoded with, worked out once per shape: the
/// naming's lookup, filter and sort cost more than the rest of decoding a change.
private final class Plans {
    struct Plan {
        typealias Column = (slot: Int, name: String)
        var table: String
        /// The key columns, in key order.
        var key: [Column]
        /// Every column the change carries, the key included, in slot order.
        var carried: [Column]
        /// `carried` without the key.
        var updated: [Column]
        /// `carried` and `updated` in ascending bytewise order of name.
        var carriedByName: [Column]
        var updatedByName: [Column]
        /// Whether the version names every column the change carries.
        var namesEveryColumn: Bool
    }

    private var byShape: [Shape: Plan] = [:]
    /// The plan found last: runs of changes of one shape skip the lookup, which hashes the mask.
    private var last: (shape: Shape, plan: Plan)?

    /// The plan of changes of `shape`, or nil when the naming has no such table.
    func plan(for shape: Shape, _ naming: SchemaNaming) -> Plan? {
        if let last, last.shape == shape { return last.plan }
        if let known = byShape[shape] {
            last = (shape, known)
            return known
        }
        guard let table = naming.tables(at: shape.position)[shape.tableID] else { return nil }
        let mask = ColumnMask(words: shape.mask)
        let carried = table.columns.filter { mask.contains($0.key) }.sorted { $0.key < $1.key }
            .map { (slot: $0.key, name: $0.value) }
        let updated = carried.filter { !table.keySlots.contains($0.slot) }
        func byName(_ list: [Plan.Column]) -> [Plan.Column] {
            list.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        }
        let plan = Plan(
            table: table.name, key: table.keySlots.map { (slot: $0, name: table.columns[$0] ?? "") },
            carried: carried, updated: updated, carriedByName: byName(carried), updatedByName: byName(updated),
            namesEveryColumn: carried.count == mask.words.reduce(0) { $0 + $1.nonzeroBitCount })
        // A history of many masks keeps the most recent ones.
        if byShape.count >= 1024 { byShape.removeAll(keepingCapacity: true) }
        byShape[shape] = plan
        last = (shape, plan)
        return plan
    }
}

/// Bound to one decoder, inside one database access: never shared between threads.
@available(*, unavailable)
extension Plans: Sendable {}
