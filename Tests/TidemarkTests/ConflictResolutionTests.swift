import Foundation
import Testing
import TidemarkTestSupport

@testable import Tidemark

/// Protocol/merge.md §5: merged state that breaks a constraint is settled by a system delete of the
/// same row on every replica, and the discarded values are listed in `conflicts()`. One test per
/// rule, named after it.
@Suite struct ConflictResolutionTests {
    static let schema = """
        CREATE TABLE users(id TEXT PRIMARY KEY, email TEXT UNIQUE, nick TEXT);
        CREATE TABLE spans(id TEXT PRIMARY KEY, lo INTEGER NOT NULL, hi INTEGER NOT NULL, CHECK (lo < hi));
        CREATE TABLE posts(id TEXT PRIMARY KEY, author TEXT REFERENCES users(id), body TEXT);
        """

    /// r0, r1 and r2 on shared simulated time.
    static func cluster() throws -> ConvergenceCluster {
        let seeds = (0..<3).map { i in [UInt8](repeating: UInt8(0x20 + i), count: 32) }
        return try ConvergenceCluster(
            schema: schema, keySeeds: seeds, skews: [0, 0, 0], label: "tidemark-conflict-rules")
    }

    /// r0 and r1 exchange both ways, twice (a resolution made on import travels back), and hold the
    /// same rows.
    static func converge(_ cluster: ConvergenceCluster, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for _ in 0..<2 {
            try cluster.send(0, to: 1)
            try cluster.send(1, to: 0)
        }
        try ExchangeExpect.sameTables(
            Array(cluster.replicas.prefix(2)), "after merging", sourceLocation: sourceLocation)
    }

    static func keys(_ cluster: ConvergenceCluster, _ replica: Int, _ table: String) throws -> [SQLValue] {
        try cluster.replicas[replica].tables()[table]?.rows.map { $0[0] } ?? []
    }

    /// r0's user u1, which r1 has; then r0 deletes it while r1 adds a post by it (not yet exchanged).
    static func orphanedPost() throws -> ConvergenceCluster {
        let cluster = try cluster()
        try cluster.write(0, "INSERT INTO users VALUES ('u1', 'a@example.com', 'parent')")
        try cluster.send(0, to: 1)
        cluster.time.advance(by: 10)
        try cluster.write(0, "DELETE FROM users WHERE id = 'u1'")
        try cluster.write(1, "INSERT INTO posts VALUES ('p1', 'u1', 'orphaned')")
        return cluster
    }

    /// §5.1: two rows that end up with the same UNIQUE value: the one whose value was written later
    /// is system-deleted on every replica, and its values are listed.
    @Test func uniqueTheRowWrittenLaterLoses() throws {
        let cluster = try Self.cluster()
        try cluster.write(0, "INSERT INTO users VALUES ('u1', 'same@example.com', 'first')")
        cluster.time.advance(by: 10)
        try cluster.write(1, "INSERT INTO users VALUES ('u2', 'same@example.com', 'second')")
        try Self.converge(cluster)
        #expect(try Self.keys(cluster, 0, "users") == [.text("u1")])
        for replica in 0..<2 {
            let listed = try cluster.replicas[replica].store.conflicts()
            let conflict = try #require(listed.first { $0.table == "users" }, "r\(replica): \(listed)")
            #expect(conflict.key == #"{"id":"u2"}"#)
            #expect(["unique", "remote"].contains(conflict.kind), "\(conflict)")
            #expect(conflict.row.contains("same@example.com") && conflict.row.contains("second"), "\(conflict)")
            #expect(conflict.generation % 2 == 0, "a system delete ends the row's life: \(conflict)")
        }
        // The delete is an ordinary local transaction of the replica that met the clash.
        let resolutions = try cluster.replicas.prefix(2).flatMap { try $0.store.fetchHistory() }
            .filter { $0.author == "tidemark" && $0.contextName == "conflict" }
        #expect(!resolutions.isEmpty)
    }

    /// A clash met among the new rows of one imported transaction is noted at the receiver's
    /// clock as it applies that transaction, not after the ones that follow it in the bundle.
    @Test func aClashAmongNewRowsIsDetectedAtItsOwnTransaction() throws {
        let cluster = try Self.cluster()
        try cluster.write(1, "INSERT INTO users VALUES ('u0', 'same@example.com', 'first')")
        cluster.time.advance(by: 10)
        try cluster.write(
            0,
            "INSERT INTO users VALUES ('u1', 'same@example.com', 'later'); "
                + "INSERT INTO users VALUES ('u2', 'other@example.com', 'beside')")
        cluster.time.advance(by: 100_000)
        try cluster.write(0, "INSERT INTO users VALUES ('u3', 'third@example.com', 'after'), ('u4', NULL, 'after')")
        try cluster.send(0, to: 1)
        #expect(try Self.keys(cluster, 1, "users") == ["u0", "u2", "u3", "u4"].map { .text($0) })
        let conflict = try #require(try cluster.replicas[1].store.conflicts().first { $0.table == "users" })
        #expect(conflict.key == #"{"id":"u1"}"#)
        let last = try #require(try cluster.replicas[0].store.fetchHistory().last)
        #expect(conflict.detected < last.timestamp, "\(conflict.detected) is not before \(last.timestamp)")
    }

    /// §5.1: the clash is settled the same way whichever replica's import meets it, and an
    /// application repairs by writing the row again.
    @Test func uniqueALaterRepairSyncsLikeAnyWrite() throws {
        let cluster = try Self.cluster()
        try cluster.write(1, "INSERT INTO users VALUES ('u2', 'same@example.com', 'second')")
        cluster.time.advance(by: 10)
        try cluster.write(0, "INSERT INTO users VALUES ('u1', 'same@example.com', 'first')")
        try Self.converge(cluster)
        #expect(try Self.keys(cluster, 1, "users") == [.text("u2")], "u1's value is the later one here")
        cluster.time.advance(by: 10)
        try cluster.write(0, "INSERT INTO users VALUES ('u1', 'other@example.com', 'first')")
        try Self.converge(cluster)
        #expect(try Self.keys(cluster, 1, "users") == [.text("u1"), .text("u2")])
    }

    /// §5.2: columns merged from two replicas that together break a CHECK: the row is
    /// system-deleted with its merged values.
    @Test func checkAMergedRowThatBreaksItIsDeletedWithItsMergedValues() throws {
        let cluster = try Self.cluster()
        try cluster.write(0, "INSERT INTO spans VALUES ('s', 1, 10)")
        try cluster.send(0, to: 1)
        cluster.time.advance(by: 10)
        try cluster.write(0, "UPDATE spans SET lo = 5 WHERE id = 's'")
        try cluster.write(1, "UPDATE spans SET hi = 3 WHERE id = 's'")
        try Self.converge(cluster)
        #expect(try Self.keys(cluster, 0, "spans") == [])
        let conflict = try #require(try cluster.replicas[0].store.conflicts().first { $0.table == "spans" })
        #expect(["check", "remote"].contains(conflict.kind), "\(conflict)")
        #expect(conflict.row.contains("\"lo\":5") && conflict.row.contains("\"hi\":3"), "\(conflict)")
    }

    /// §5.3: a child added on one replica while its parent was deleted on another follows its
    /// parent's delete everywhere, and is listed.
    @Test func foreignKeysAnOrphanFollowsItsParentsDelete() throws {
        let cluster = try Self.orphanedPost()
        try Self.converge(cluster)
        #expect(try Self.keys(cluster, 0, "posts") == [])
        #expect(try Self.keys(cluster, 0, "users") == [])
        for replica in 0..<2 {
            let conflict = try #require(try cluster.replicas[replica].store.conflicts().first { $0.table == "posts" })
            #expect(["foreign_key", "remote"].contains(conflict.kind), "\(conflict)")
            #expect(conflict.row.contains("orphaned"), "\(conflict)")
        }
    }

    /// §5.4: a replica that receives a resolution without meeting the violation itself lists it as
    /// `remote`, with the values. (Foreign keys are checked at the end of an import, §5.3, so a
    /// receiver that gets the orphan and its system delete in one import never holds the orphan.)
    @Test func aReceiverListsAnImportedSystemDeleteAsRemote() throws {
        let cluster = try Self.orphanedPost()
        try cluster.send(1, to: 0)
        let resolver = try #require(try cluster.replicas[0].store.conflicts().first)
        #expect(resolver.kind == "foreign_key" && resolver.resolvedBy == cluster.replicas[0].id, "\(resolver)")
        // r2 gets r1's post and r0's resolution together from r0.
        try cluster.send(0, to: 2)
        #expect(try Self.keys(cluster, 2, "posts") == [])
        let listed = try cluster.replicas[2].store.conflicts()
        #expect(listed.count == 1, "\(listed)")
        #expect(listed.first?.kind == "remote" && listed.first?.resolvedBy == cluster.replicas[0].id, "\(listed)")
        #expect(listed.first?.row.contains("orphaned") == true, "\(listed)")
    }
}
