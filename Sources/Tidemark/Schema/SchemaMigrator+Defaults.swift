import Foundation
import GRDB

extension SchemaMigrator {
    /// Refuses a migration that gives a tracked table a column whose DEFAULT is not the same on
    /// every replica (`random()`, the current time): a replica on the new version fills that
    /// column itself for the rows it receives from replicas still on the old one (Protocol/
    /// schema.md §6), so each would hold another value. SQLite decides which expressions are
    /// deterministic: the default is tried as a generated column of a table of its own, in a
    /// savepoint rolled back.
    func checkDefaultsAreDeterministic(_ added: [String: [String]]) throws {
        for (table, columns) in added.sorted(by: { $0.key < $1.key }) {
            let defaults = try Row.fetchAll(
                db, sql: "SELECT name, dflt_value FROM pragma_table_xinfo(?, 'main') WHERE dflt_value IS NOT NULL",
                arguments: [table])
            for row in defaults {
                let (column, expression): (String, String) = (row[0], row[1])
                guard columns.contains(column), let problem = try nondeterminism(of: expression) else { continue }
                throw StoreError.unsupportedMigration(
                    table: table,
                    change:
                        "its new column '\(column)' has DEFAULT \(expression), which SQLite does not compute alike on every replica (\(problem)); a replica on the new version gives it to the rows it receives from replicas still on the old one"
                )
            }
        }
    }

    /// SQLite's reason for refusing `expression` as a value every replica computes alike; nil when
    /// it is one. An expression SQLite cannot evaluate at all (`0x10000000000000000`, which only a
    /// table's DEFAULT takes, or one that overflows) is refused too: a replica on the new version
    /// could then insert no row a replica on the old one sends.
    private func nondeterminism(of expression: String) throws -> String? {
        let probe = "temp.\(Bookkeeping.prefix)default_probe"
        try db.execute(sql: "SAVEPOINT tidemark_default_probe")
        defer {
            try? db.execute(sql: "ROLLBACK TO tidemark_default_probe; RELEASE tidemark_default_probe")
        }
        do {
            try db.execute(
                sql: """
                    CREATE TABLE \(probe)(x, y AS (\(expression)));
                    INSERT INTO \(probe)(x) VALUES (1);
                    SELECT y FROM \(probe);
                    """)
            return nil
        } catch let error as DatabaseError {
            return error.message ?? "\(error)"
        }
    }
}
