import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// An edit that a delete it had not seen discards is listed in the conflicts, with its values
/// (Protocol/merge.md §4.5): on the replica that made it, and, for a member retired while away, on
/// the replicas that discard its late edit.
@Suite struct DiscardedEditsTests {
    /// The `deleted` conflicts `replica` lists, as (key, row) JSON.
    static func deleted(_ replica: TestReplica) throws -> [Store.Conflict] {
        try replica.store.conflicts().filter { $0.kind == "deleted" }
    }

    @Test func anEditADeleteHadNotSeenIsListedWhereItWasMade() throws {
        let group = try TombstoneTests.group()
        _ = try group["b"].store.execute(sql: "UPDATE notes SET body = 'edited by b' WHERE id = 'a-1'")
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'a-1'")
        _ = try group.push("a")
        _ = try group.pull("b")
        let listed = try Self.deleted(group["b"])
        #expect(listed.count == 1)
        #expect(listed.first?.table == "notes")
        #expect(listed.first?.key == #"{"id":"a-1"}"#)
        #expect(listed.first?.row == #"{"body":"edited by b"}"#)
        #expect(listed.first?.resolvedBy == group["a"].id)
        #expect(listed.first?.detail.contains("body") == true)
        try group.round()
        try group.round()
        for replica in group.replicas {
            #expect(try !TombstoneTests.notes(replica).contains { $0.first == .text("a-1") }, "\(replica.name)")
        }
        // a and c discard b's edit as any stale write; only b, which made it, lists it.
        #expect(try Self.deleted(group["a"]).isEmpty)
        #expect(try Self.deleted(group["c"]).isEmpty)
        try group.expectConverged()
    }

    @Test func anEditTheDeleteHadSeenIsNotListed() throws {
        let group = try TombstoneTests.group()
        _ = try group["b"].store.execute(sql: "UPDATE notes SET body = 'edited by b' WHERE id = 'a-1'")
        try group.round()
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'a-1'")
        try group.round()
        try group.round()
        for replica in group.replicas { #expect(try Self.deleted(replica).isEmpty, "\(replica.name)") }
        try group.expectConverged()
    }

    @Test func aRetiredMembersLateEditIsListedWithItsValues() throws {
        let group = try TombstoneTests.group()
        try group["a"].store.retire(peer: "c")
        _ = try group["a"].store.execute(sql: "DELETE FROM notes WHERE id = 'c-1'")
        for _ in 0..<3 { try group.round(["a", "b"]) }
        _ = try group["c"].store.execute(sql: "UPDATE notes SET body = 'edited while away' WHERE id = 'c-1'")
        // c comes back and pushes before it has pulled: a and b discard its edit and list it.
        _ = try group.push("c")
        for name in ["a", "b"] {
            _ = try group.pull(name)
            let listed = try Self.deleted(group[name])
            #expect(listed.map(\.row) == [#"{"body":"edited while away"}"#], "\(name)")
            #expect(listed.first?.resolvedBy == group["c"].id, "\(name)")
        }
        for _ in 0..<3 { try group.round() }
        for replica in group.replicas {
            #expect(try !TombstoneTests.notes(replica).contains { $0.first == .text("c-1") }, "\(replica.name)")
        }
        try group.expectConverged()
    }
}
