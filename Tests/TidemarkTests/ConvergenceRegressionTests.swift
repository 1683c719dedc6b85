import Foundation
import ReferenceModel
import Testing
import Tidemark
import TidemarkTestSupport

/// Divergences the convergence property found, each kept as the seed that found it (valid for this
/// version of `RandomWorkload` and `ConvergenceScenario`) and as a hand-shrunk reproduction.
@Suite struct ConvergenceRegressionTests {
    /// Two changes of one transaction to one column of one row (insert then update, or update twice)
    /// share the transaction's clock. The origin folds both in commit order and keeps the last value
    /// (merge.md §3); a receiver that writes a column only for a strictly greater clock applied the
    /// first and refused the second, so replicas holding the same transactions differed forever.
    /// Fixed by e456c2f (merge.md §4.3 now writes on `k' ≥ clock[c]`, changes in record order).
    static let sameColumnTwice: [(String, String)] = [
        (
            "insert, then update",
            "INSERT INTO users(id, email, name, score) VALUES ('u1', NULL, 'ann', 1); UPDATE users SET score = 2 WHERE id = 'u1'"
        ),
        (
            "insert if missing, then bump",
            "INSERT OR IGNORE INTO users(id, email, name, score) VALUES ('u1', NULL, 'ann', 1); UPDATE users SET score = score + 1 WHERE id = 'u1'"
        ),
        (
            "update twice",
            "INSERT INTO users(id, name) VALUES ('u1', 'ann'); UPDATE users SET name = 'bob' WHERE id = 'u1'; UPDATE users SET name = 'cy' WHERE id = 'u1'"
        ),
    ]

    @Test("one transaction writing one column twice converges", arguments: sameColumnTwice)
    func oneTransactionWritesOneColumnTwice(_ label: String, _ sql: String) throws {
        let cluster = try ConvergenceCluster(
            schema: RandomWorkload.schema,
            keySeeds: [[UInt8](repeating: 1, count: 32), [UInt8](repeating: 2, count: 32)], skews: [0, 0])
        let (a, b) = (cluster.replicas[0], cluster.replicas[1])
        _ = try a.store.execute(sql: sql)
        try cluster.exchange(from: 0, to: 1, since: .zero)

        var model = ReferenceModel(tables: RandomWorkload.tables)
        model.add(try a.store.fetchHistory())
        let expected = model.rows()["users"]?[[.text("u1")]]
        let origin = try a.tables()["users"]?.rows.first
        let receiver = try b.tables()["users"]?.rows.first
        #expect(origin == expected, "\(label): the origin disagrees with the model")
        #expect(
            receiver == origin,
            "\(label): the receiver holds \(receiver.map(\.description) ?? "nothing"), the origin \(origin.map(\.description) ?? "nothing")"
        )
    }

    /// Seeds that found the divergence above: through the `sqlite3` shell (insert, then set the
    /// score) and through `write` (insert if missing, then bump).
    @Test("seeds that diverged", arguments: [UInt64(14_557_517_757_725_224_132), 17_484_592_495_841_087_078])
    func divergedSeed(_ seed: UInt64) async throws {
        // As found: before the scenario made migrations.
        try await ConvergenceScenario(seed: seed, migrations: false).run()
    }
}
