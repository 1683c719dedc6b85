import TidemarkCore

/// For an import: how the names a transaction's version gives a table and its columns map to the
/// slots they are recorded in, and to the names the table has today (Protocol/schema.md §6). A
/// column renamed since keeps its identity; a column dropped since is not merged; a table
/// untracked since is not merged at all. History records every change as it was written.
final class SchemaTranslations {
    /// One table's names at one version. A class: an import looks one up for every change, and a
    /// reference is what that costs to hand over; it keeps what `slots(of:_:)` found last.
    final class Translation {
        /// The registration.
        let id: Int64
        /// The table's name at the version.
        let name: String
        /// Slot of each column name at the version.
        let slots: [String: Int]
        /// Today's registration; nil when the table is no longer tracked.
        let table: TrackedTable?
        /// Today's name of each live slot.
        let names: [Int: String]
        /// Whether the version names everything as today does.
        let identity: Bool
        /// Whether the version has every column the bundle's header declares for the table: the
        /// decoder holds each change to those, so its names need no check one by one.
        let coversDeclared: Bool

        init(
            id: Int64, name: String, slots: [String: Int], table: TrackedTable?, names: [Int: String], identity: Bool,
            coversDeclared: Bool
        ) {
            self.id = id
            self.name = name
            self.slots = slots
            self.table = table
            self.names = names
            self.identity = identity
            self.coversDeclared = coversDeclared
        }

        /// The slot of each of `columns` (nil for one the version lacks). `list` says which list
        /// of a change they are (0 its key, 1 its values, 2 a delete's tombstone or key): the
        /// slots of the names a list was last given are kept, since a transaction's changes
        /// mostly name the same columns, and the decoder hands out the same name strings again,
        /// which compare cheaper than they hash.
        func slots(of columns: [History.Column], _ list: Int) -> [Int?] {
            let last = recent[list]
            if last.names.count == columns.count && zip(last.names, columns).allSatisfy({ $0 == $1.name }) {
                return last.slots
            }
            let found = (columns.map(\.name), columns.map { slots[$0.name] })
            recent[list] = found
            return found.1
        }

        private var recent: [(names: [String], slots: [Int?])] = Array(repeating: ([], []), count: 3)

        /// The change under today's names, without the columns dropped since; nil when the table
        /// is no longer tracked. Throws if it names a column its version does not have.
        func current(_ change: History.Change, path: String) throws -> History.Change? {
            func check(_ columns: [History.Column]) throws {
                for column in columns where slots[column.name] == nil {
                    throw ExchangeError.schemaMismatch(
                        path: path, table: name,
                        detail: "has no column '\(column.name)' under the schema version the change was written under")
                }
            }
            if !coversDeclared {
                try check(change.key)
                try check(change.values)
                try check(change.tombstone ?? [])
            }
            guard let table else { return nil }
            if identity { return change }
            var current = change
            current.table = table.name
            current.key = rename(change.key)
            current.values = rename(change.values)
            current.tombstone = change.tombstone.map(rename)
            return current
        }

        /// A snapshot's row state under today's names; nil when the table is no longer tracked.
        func current(_ state: RowState) -> RowState? {
            guard let table else { return nil }
            if identity { return state }
            return RowState(
                table: table.name, key: rename(state.key), generation: state.generation,
                cells: state.cells.compactMap { cell in
                    names[slots[cell.name] ?? -1].map { RowState.Cell(name: $0, value: cell.value, clock: cell.clock) }
                })
        }

        private func rename(_ columns: [History.Column]) -> [History.Column] {
            columns.compactMap { column in names[slots[column.name] ?? -1].map { History.Column($0, column.value) } }
        }
    }

    private let naming: SchemaNaming
    private let current: Int
    private let tables: [Int64: TrackedTable]
    private var cache: [Key: Translation] = [:]
    /// Every column name, keys included, that the header of the bundle being applied declares per
    /// table.
    private var declared: [String: [String]] = [:]
    /// The translation returned last: consecutive changes mostly share their table.
    private var last: (key: Key, translation: Translation)?

    /// A table name at a position: what an import looks a translation up by, once per change.
    private struct Key: Hashable {
        var position: Int
        var table: String
    }

    /// Translations into `tables` (the tracked tables), which `naming` names at position `current`.
    init(naming: SchemaNaming, current: Int, tables: [TrackedTable]) {
        self.naming = naming
        self.current = current
        self.tables = Dictionary(uniqueKeysWithValues: tables.map { ($0.id, $0) })
    }

    /// Learns the tables and columns the header of the bundle being applied declares. Translations
    /// made before are made again, so that they know it too.
    func declare(_ tables: [BundleHeader.TableSchema]) {
        declared = Dictionary(tables.map { ($0.name, $0.columns) }, uniquingKeysWith: +)
        cache = [:]
        last = nil
    }

    /// The translation of `table` as named at `position`; throws `schemaMismatch` if no table had
    /// that name there.
    func translation(of table: String, at position: Int, path: String) throws -> Translation {
        let key = Key(position: position, table: table)
        if let last, last.key == key { return last.translation }
        if let known = cache[key] {
            last = (key, known)
            return known
        }
        guard let named = naming.table(named: table, at: position) else {
            throw ExchangeError.schemaMismatch(
                path: path, table: table,
                detail: position == 0 ? "is not tracked here" : "is not tracked here under schema version \(position)")
        }
        let today = tables[named.id]
        let names = today.map { Dictionary(uniqueKeysWithValues: zip($0.slots, $0.columns)) } ?? [:]
        let slots = Dictionary(uniqueKeysWithValues: named.columns.map { ($0.value, $0.key) })
        let translation = Translation(
            id: named.id, name: named.name, slots: slots, table: today, names: names,
            identity: today?.name == named.name && names == named.columns,
            coversDeclared: declared[table].map { $0.allSatisfy { slots[$0] != nil } } ?? false)
        cache[key] = translation
        return translation
    }
}

/// Used by one import on one connection: never shared between threads.
@available(*, unavailable)
extension SchemaTranslations.Translation: Sendable {}
