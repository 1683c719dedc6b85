import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// One test per rule of Protocol/merge.md §1–§4, named after it, so that a broken rule fails here by
/// name and not only as a diverged seed of `ConvergencePropertyTests`. Replicas run on simulated
/// time (`ConvergenceCluster`): each test says which write is later.
@Suite struct MergeRulesTests {
    /// Two replicas r0 and r1 (r1's replica id orders after r0's), trusting each other, both at the
    /// same simulated time unless a test skews one.
    static func pair(skews: [Int64] = [0, 0]) throws -> ConvergenceCluster {
        let seeds = (0..<2).map { i in [UInt8](repeating: UInt8(0x10 + i), count: 32) }
        let cluster = try ConvergenceCluster(
            schema: TestReplica.schema, keySeeds: seeds, skews: skews, label: "tidemark-merge-rules")
        return cluster
    }

    /// Both directions, then both hold the same rows.
    static func converge(_ cluster: ConvergenceCluster, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try cluster.send(0, to: 1)
        try cluster.send(1, to: 0)
        try ExchangeExpect.sameTables(cluster.replicas, "after merging", sourceLocation: sourceLocation)
    }

    /// The row `id` of `items` as (name, qty), or nil when there is none.
    static func item(_ cluster: ConvergenceCluster, _ replica: Int, _ id: String) throws -> [SQLValue]? {
        try cluster.replicas[replica].tables()["items"]?.rows.first { $0[0] == .text(id) }.map { [$0[1], $0[2]] }
    }

    /// The generation each change of `replica`'s own history gave the row `id`, in order.
    static func generations(_ cluster: ConvergenceCluster, _ replica: Int, _ id: String) throws -> [Int64] {
        let store = cluster.replicas[replica].store
        return try store.fetchHistory().filter { $0.origin == store.replica.id }.flatMap(\.changes)
            .filter { $0.key.first?.value == .text(id) }.map(\.generation)
    }

    // MARK: - §1 Order

    /// §1.2: after an import a replica's next timestamp is greater than every imported one, even
    /// when the sender's clock runs far ahead.
    @Test func importingAdvancesTheClockPastEveryImportedTimestamp() throws {
        let cluster = try Self.pair(skews: [0, 60_000])
        try cluster.write(1, "INSERT INTO items(id, name) VALUES ('x', 'ahead')")
        try cluster.send(1, to: 0)
        try cluster.write(0, "UPDATE items SET name = 'after' WHERE id = 'x'")
        let history = try cluster.replicas[0].store.fetchHistory()
        let imported = try #require(history.first { $0.origin == cluster.replicas[1].id })
        let own = try #require(history.last { $0.origin == cluster.replicas[0].id })
        #expect(own.timestamp > imported.timestamp, "\(own.timestamp) after \(imported.timestamp)")
        // And so the later write wins everywhere, although r0's wall clock is a minute behind.
        try Self.converge(cluster)
        #expect(try Self.item(cluster, 1, "x")?[0] == .text("after"))
    }

    /// §1.3: writes with the same timestamp are ordered by origin id: the greater id's value wins.
    @Test func equalTimestampsAreOrderedByOriginID() throws {
        let cluster = try Self.pair()
        try cluster.write(0, "INSERT INTO items(id, name) VALUES ('x', 'r0')")
        try cluster.write(1, "INSERT INTO items(id, name) VALUES ('x', 'r1')")
        let stamps = try cluster.replicas.map { try #require($0.store.fetchHistory().last?.timestamp) }
        #expect(stamps[0] == stamps[1], "both sealed at the same simulated instant: \(stamps)")
        try Self.converge(cluster)
        let winner = cluster.replicas[0].id.bytes.lexicographicallyPrecedes(cluster.replicas[1].id.bytes) ? "r1" : "r0"
        #expect(try Self.item(cluster, 0, "x")?[0] == .text(winner))
    }

    // MARK: - §3 Local writes

    /// §3: an insert starts life 1, an update stays in it, a delete ends it (2), an insert starts
    /// the next life (3).
    @Test func localWritesTakeTheirGenerationFromTheRowState() throws {
        let cluster = try Self.pair()
        for sql in [
            "INSERT INTO items(id, name) VALUES ('x', 'one')", "UPDATE items SET qty = 1 WHERE id = 'x'",
            "DELETE FROM items WHERE id = 'x'", "INSERT INTO items(id, name) VALUES ('x', 'two')",
        ] {
            cluster.time.advance(by: 1)
            try cluster.write(0, sql)
        }
        // Folded (lazily, §3) at the latest when exported: the receiver sees the same generations.
        try cluster.send(0, to: 1)
        let generations = try Self.generations(cluster, 0, "x")
        #expect(generations == [1, 1, 2, 3], "\(generations)")
        let received = try cluster.replicas[1].store.fetchHistory().flatMap(\.changes).map(\.generation)
        #expect(received == [1, 1, 2, 3], "\(received)")
    }

    // MARK: - §4 Applying an imported change

    /// §4.3, on a table wider than 64 columns: one import that writes different columns beyond the
    /// 64th in different transactions puts each value in its own column.
    @Test func columnsBeyondTheSixtyFourthMergeIntoTheirOwnPlaces() throws {
        let columns = (0..<70).map { "c\($0)" }
        let schema = "CREATE TABLE wide(id TEXT PRIMARY KEY, \(columns.map { "\($0) TEXT" }.joined(separator: ", ")));"
        let seeds = (0..<2).map { i in [UInt8](repeating: UInt8(0x20 + i), count: 32) }
        let cluster = try ConvergenceCluster(
            schema: schema, keySeeds: seeds, skews: [0, 0], label: "tidemark-merge-rules-wide")
        try cluster.write(0, "INSERT INTO wide(id) VALUES ('x')")
        try cluster.send(0, to: 1)
        try cluster.write(0, "UPDATE wide SET c65 = 'a' WHERE id = 'x'")
        try cluster.write(0, "UPDATE wide SET c66 = 'b' WHERE id = 'x'")
        try cluster.write(0, "UPDATE wide SET c2 = 'c', c67 = 'd' WHERE id = 'x'")
        try cluster.send(0, to: 1)
        let row = try #require(try cluster.replicas[1].tables()["wide"]?.rows.first)
        #expect(
            row[3] == .text("c") && row[66] == .text("a") && row[67] == .text("b") && row[68] == .text("d"), "\(row)")
        try ExchangeExpect.sameTables(cluster.replicas, "after merging")
    }

    /// §4.1: a delete wins over every write it has not seen, even a later one: that write carries
    /// the life the delete ended.
    @Test func aStaleLifeNeverChangesTheRow() throws {
        let cluster = try Self.pair()
        try cluster.write(0, "INSERT INTO items(id, name) VALUES ('x', 'one')")
        try cluster.send(0, to: 1)
        cluster.time.advance(by: 10)
        try cluster.write(0, "DELETE FROM items WHERE id = 'x'")
        cluster.time.advance(by: 10)
        try cluster.write(1, "UPDATE items SET name = 'later, unseen delete' WHERE id = 'x'")
        try Self.converge(cluster)
        #expect(try Self.item(cluster, 0, "x") == nil)
    }

    /// §4.2: a change of a newer life replaces the row: its values come only from that life, and
    /// the older life's writes, later or not, no longer count.
    @Test func aNewerLifeReplacesTheRowAndClearsItsClocks() throws {
        let cluster = try Self.pair()
        try cluster.write(0, "INSERT INTO items(id, name, qty) VALUES ('x', 'one', 1)")
        try cluster.send(0, to: 1)
        cluster.time.advance(by: 10)
        try cluster.write(1, "DELETE FROM items WHERE id = 'x'")
        try cluster.write(1, "INSERT INTO items(id, name) VALUES ('x', 'second life')")
        cluster.time.advance(by: 10)
        try cluster.write(0, "UPDATE items SET qty = 5 WHERE id = 'x'")
        try Self.converge(cluster)
        #expect(try Self.item(cluster, 0, "x") == [.text("second life"), .null])
        #expect(try Self.generations(cluster, 1, "x") == [2, 3])
    }

    /// §4.3: in the same life each column keeps the write with the greater clock; columns only one
    /// side wrote keep that write.
    @Test func theSameLifeMergesColumnByColumnAndTheLaterWriteWins() throws {
        let cluster = try Self.pair()
        try cluster.write(0, "INSERT INTO items(id, name, qty) VALUES ('x', 'one', 1)")
        try cluster.send(0, to: 1)
        cluster.time.advance(by: 10)
        try cluster.write(1, "UPDATE items SET name = 'r1, earlier', qty = 7 WHERE id = 'x'")
        cluster.time.advance(by: 10)
        try cluster.write(0, "UPDATE items SET name = 'r0, later' WHERE id = 'x'")
        try Self.converge(cluster)
        #expect(try Self.item(cluster, 0, "x") == [.text("r0, later"), .integer(7)])
    }

    /// §4.3: concurrent inserts of one identity are one life and merge column by column.
    @Test func concurrentInsertsOfOneIdentityAreOneLife() throws {
        let cluster = try Self.pair()
        try cluster.write(0, "INSERT INTO items(id, name, qty) VALUES ('x', 'r0', 1)")
        cluster.time.advance(by: 10)
        try cluster.write(1, "INSERT INTO items(id, name, qty) VALUES ('x', 'r1', 2)")
        try Self.converge(cluster)
        #expect(try Self.item(cluster, 0, "x") == [.text("r1"), .integer(2)])
        #expect(try Self.generations(cluster, 0, "x") == [1])
        #expect(try Self.generations(cluster, 1, "x") == [1])
    }

    /// §4.3: a transaction that writes a column twice leaves its last value on every replica.
    @Test func aTransactionThatWritesAColumnTwiceLeavesItsLastValue() throws {
        let cluster = try Self.pair()
        try cluster.write(
            0,
            "INSERT INTO items(id, name) VALUES ('x', 'first'); UPDATE items SET name = 'last' WHERE id = 'x'")
        try Self.converge(cluster)
        #expect(try Self.item(cluster, 1, "x")?[0] == .text("last"))
    }

    /// §4 "Consequences": a deleted row comes back only through an insert by a replica that had
    /// seen the delete.
    @Test func aDeletedRowComesBackOnlyThroughAnInsertThatSawTheDelete() throws {
        let cluster = try Self.pair()
        try cluster.write(0, "INSERT INTO items(id, name) VALUES ('x', 'one')")
        try Self.converge(cluster)
        cluster.time.advance(by: 10)
        try cluster.write(0, "DELETE FROM items WHERE id = 'x'")
        try Self.converge(cluster)
        cluster.time.advance(by: 10)
        try cluster.write(1, "INSERT INTO items(id, name) VALUES ('x', 'back')")
        try Self.converge(cluster)
        #expect(try Self.item(cluster, 0, "x")?[0] == .text("back"))
    }
}
