import TidemarkCore

/// What each registered table and each of its column slots was called at every position of the
/// lineage (Protocol/schema.md §3). History is written, relayed and hashed with the names of the
/// version each transaction was written under, so a transaction relayed after a rename is the same
/// bytes its origin signed; an import maps those names to slots the same way.
///
/// It is derived, never stored: the current registrations are the newest position, and each
/// version, undone, gives the one before it.
struct SchemaNaming {
    /// A table as one version names it.
    struct Table: Equatable {
        /// The registration (`TrackedTable.id`).
        var id: Int64
        var name: String
        /// The key columns' slots, in key order.
        var keySlots: [Int]
        /// The slots of the table's columns at that version, and their names.
        var columns: [Int: String]

        var keyColumns: [String] { keySlots.map { columns[$0] ?? "" } }
        func slot(of name: String) -> Int? { columns.first { $0.value == name }?.key }
    }

    /// The tables at each position, 0 (the initial schema) to the lineage's length.
    private let positions: [[Int64: Table]]

    /// The naming of `registrations` (every one, untracked tables included) along `lineage`. A
    /// version that does not fit the registrations is skipped: names it would give are missing.
    init(registrations: [TrackedTable], lineage: [Schema.Version]) {
        var registrations = registrations
        var state = Self.current(registrations)
        var positions = [state]
        for version in lineage.reversed() {
            _ = Self.undo(version, &state, registrations: &registrations, synthesize: false)
            positions.append(state)
        }
        self.positions = positions.reversed()
    }

    /// The tables at `position` (clamped to the lineage).
    func tables(at position: Int) -> [Int64: Table] { positions[max(0, min(position, positions.count - 1))] }

    /// A table by its name at `position`.
    func table(named name: String, at position: Int) -> Table? { tables(at: position).values.first { $0.name == name } }

    /// Every table name and column name some position in `range` uses, by table name.
    func header(positions range: ClosedRange<Int>) -> [BundleHeader.TableSchema] {
        var tables: [String: (id: Int64, schema: BundleHeader.TableSchema)] = [:]
        for position in range {
            for table in self.tables(at: position).values {
                var entry =
                    tables[table.name] ?? (
                        table.id, BundleHeader.TableSchema(name: table.name, keyColumns: table.keyColumns, columns: [])
                    )
                for (_, name) in table.columns.sorted(by: { $0.key < $1.key })
                where !entry.schema.columns.contains(name) {
                    entry.schema.columns.append(name)
                }
                tables[table.name] = entry
            }
        }
        // In registration order, as before any rename; `TableSchema` sorts the columns.
        return tables.values.sorted { ($0.id, $0.schema.name) < ($1.id, $1.schema.name) }.map {
            BundleHeader.TableSchema(name: $0.schema.name, keyColumns: $0.schema.keyColumns, columns: $0.schema.columns)
        }
    }

    /// The registrations that make `versions` (the newest last) the history of `registrations`,
    /// a store whose tables already have what they change (one created from the app's newer
    /// schema): `registrations` with the dropped columns and untracked tables the versions name
    /// added. Nil when the tables do not fit the versions.
    static func adopting(_ versions: [Schema.Version], by registrations: [TrackedTable]) -> [TrackedTable]? {
        // A column dropped and later added again under its name cannot be told from the one the
        // table had before the drop, in a store that made neither migration: its values would
        // pass for the new column's. Such a store makes the migrations itself. (Names are
        // compared in any table, which holds more than needed, never less.)
        // Likewise a table it tracks that the versions untrack (and track again): after them it
        // is another table, whose rows the store's would pass for with the old table's clocks.
        var dropped: Set<String> = []
        let tracked = Set(registrations.filter { $0.untrackedAt == nil }.map(\.name))
        for version in versions {
            for operation in version.change.operations {
                switch operation {
                case .dropColumn(_, let column): dropped.insert(column)
                case .addColumn(_, let column) where dropped.contains(column): return nil
                case .untrack(let table, _, _) where tracked.contains(table): return nil
                default: continue
                }
            }
        }
        let now = current(registrations)
        var registrations = registrations
        var state = now
        for version in versions.reversed() {
            guard undo(version, &state, registrations: &registrations, synthesize: true) else { return nil }
        }
        // Columns whose names the versions permute (two swapped through a temporary name, say)
        // fit by name either way: the store's values would pass for each other's. A column the
        // versions renamed away from a name that another column of the table had before them,
        // and has now, is such a one. A column the versions added under the name one of them
        // renamed away is not: a store that made none of them has no column of the new name.
        for (id, table) in now {
            guard let start = state[id] else { continue }
            let slots = Dictionary(table.columns.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
            for (slot, name) in table.columns {
                guard let was = start.columns[slot], was != name, let other = slots[was] else { continue }
                if start.columns[other] != nil { return nil }
            }
        }
        return registrations
    }

    private static func current(_ registrations: [TrackedTable]) -> [Int64: Table] {
        var state: [Int64: Table] = [:]
        for table in registrations where table.untrackedAt == nil { state[table.id] = named(table) }
        return state
    }

    /// A registration's live columns, as it names them.
    private static func named(_ table: TrackedTable) -> Table {
        Table(
            id: table.id, name: table.name, keySlots: table.keyIndexes.map { table.slots[$0] },
            columns: Dictionary(uniqueKeysWithValues: zip(table.slots, table.columns)))
    }

    /// Turns the tables after `version` into the tables before it. Operations name tables and
    /// columns as the parent version does, except the names a version introduces (a tracked
    /// table, an added column, a rename's new name), and apply together. Returns false if the
    /// tables do not fit; with `synthesize`, a dropped column or untracked table the registrations
    /// do not know is added to them instead. Long by design: the passes over the version's
    /// operations (additions and renames, then drops, then untracked tables) must run in this
    /// order, since a version's operations apply together.
    private static func undo(
        _ version: Schema.Version, _ state: inout [Int64: Table], registrations: inout [TrackedTable], synthesize: Bool
    ) -> Bool {
        let operations = version.change.operations
        let position = version.position
        var fits = true
        var renamed: [String: String] = [:]
        for case .renameTable(let from, let to) in operations { renamed[from] = to }
        func id(_ name: String) -> Int64? { state.first { $0.value.name == name }?.key }
        func child(_ table: String) -> Int64? { id(renamed[table] ?? table) }
        // Added columns and tracked tables go; renamed columns take their old names back.
        var columnRenames: [(Int64, Int, String)] = []
        for operation in operations {
            switch operation {
            case .addColumn(let table, let column):
                guard let id = child(table), let slot = state[id]!.slot(of: column) else {
                    fits = false
                    continue
                }
                state[id]!.columns[slot] = nil
            case .track(let table, let keys, let columns):
                guard let id = id(table), state[id]!.keyColumns == keys,
                    Set(columns).isSubset(of: state[id]!.columns.values)
                else {
                    fits = false
                    continue
                }
                state[id] = nil
            case .renameColumn(let table, let column, let to):
                guard let id = child(table), let slot = state[id]!.slot(of: to) else {
                    fits = false
                    continue
                }
                columnRenames.append((id, slot, column))
            default: continue
            }
        }
        for (id, slot, name) in columnRenames { state[id]!.columns[slot] = name }
        for operation in operations {
            guard case .dropColumn(let table, let column) = operation else { continue }
            guard let id = child(table), let r = registrations.firstIndex(where: { $0.id == id }),
                state[id]!.slot(of: column) == nil
            else {
                fits = false
                continue
            }
            if let retired = registrations[r].retired.first(where: { $0.droppedAt == position && $0.name == column }) {
                state[id]!.columns[retired.slot] = column
            } else if synthesize {
                let slot = registrations[r].slotCount
                registrations[r].retired.append(.init(slot: slot, name: column, droppedAt: position))
                state[id]!.columns[slot] = column
            } else {
                fits = false
            }
        }
        for (from, to) in renamed {
            guard let id = id(to) else {
                fits = false
                continue
            }
            state[id]!.name = from
        }
        for operation in operations {
            guard case .untrack(let table, let keys, let columns) = operation else { continue }
            guard id(table) == nil else {
                fits = false
                continue
            }
            var registration = registrations.first { $0.untrackedAt == position && $0.name == table }
            if registration == nil && synthesize {
                let keyIndexes = keys.compactMap { columns.firstIndex(of: $0) }
                var made = TrackedTable(
                    id: (registrations.map(\.id).max() ?? 0) + 1, name: table, columns: columns, keyIndexes: keyIndexes,
                    preservedIndexes: [])
                made.untrackedAt = position
                registrations.append(made)
                registration = made
            }
            guard let registration else {
                fits = false
                continue
            }
            state[registration.id] = named(registration)
        }
        return fits
    }
}
