import Foundation
import GRDB
import Tidemark

/// Workload 8 with a foreign key: the same small bundle from a new peer applied to a store whose
/// `parts` table holds N rows that reference `items`, against an empty replica. An import looks
/// for the orphans it may leave (Protocol/merge.md §5.3) among the rows it wrote, not in every row
/// of the child table: the ratio must stay near 1 as N grows.
struct ForeignKeyImport {
    var rows: Int
    var repetitions: Int
    var smallBundleChanges = 10

    static let schema =
        Fixtures.schema + "; CREATE TABLE parts(id TEXT PRIMARY KEY, item TEXT REFERENCES items(id) ON DELETE CASCADE);"
        + " CREATE INDEX parts_item ON parts(item)"

    /// The medians of the small imports into the large store and into the empty one.
    func run(in scratch: URL) throws -> Report.Row {
        let path = { (name: String) in scratch.appendingPathComponent("fk-\(name).sqlite").path }
        let setup = { (name: String) in Store.Setup(replicaName: name, schema: ("bench-fk", Self.schema)) }
        let (large, _) = try Store.initialize(path("large"), setup: setup("large"))
        Output.progress("history: a store of \(rows) rows referencing \(rows) others")
        _ = try large.write { db in
            for i in 0..<rows {
                try db.execute(sql: ChangeMix.insertSQL, arguments: ChangeMix.insertArguments(i))
                try db.execute(
                    sql: "INSERT INTO parts(id, item) VALUES (?, ?)", arguments: ["p\(i)", ChangeMix.key(i)])
            }
        }
        // Folds the local writes, as a first push would, outside the timed imports.
        _ = try large.exportBundle(
            since: .zero, to: path("large-own") + ".tmb",
            key: try KeyFile.load(KeyFile.defaultPath(forStore: path("large"))))
        let (empty, _) = try Store.initialize(path("empty"), setup: setup("empty"))
        let (onLarge, onEmpty) = try SmallImports(
            large: large, empty: empty,
            makePeer: { name in (try Store.initialize(path(name), setup: setup(name)).store, path(name)) },
            repetitions: repetitions, changes: 2 * smallBundleChanges, metric: "history.small_import_foreign_key"
        ).run { db, round in
            for i in 0..<smallBundleChanges {
                let n = rows + round * smallBundleChanges + i
                try db.execute(sql: ChangeMix.insertSQL, arguments: ChangeMix.insertArguments(n))
                try db.execute(
                    sql: "INSERT INTO parts(id, item) VALUES (?, ?)", arguments: ["p\(n)", ChangeMix.key(n)])
            }
        }
        return Report.Row(
            metric: "history.small_import_foreign_key", ours: Measurement(samples: onLarge),
            baseline: Measurement(samples: onEmpty), baselineName: "empty store", unit: "s", goal: .atMost(2.0))
    }
}
