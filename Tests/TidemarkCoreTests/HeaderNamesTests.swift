import Testing
import TidemarkCore

/// The decoder reads each name of a change as the header's table, key column or column by a number
/// it gave the name (`HeaderNames`); these check that a name keeps that number wherever it is read.
@Suite struct HeaderNamesTests {
    @Test func namesCutByTheChunkBoundaryAreTheNamesTheyWereBefore() throws {
        let fixture = CodecFixture(origins: 1)
        // Transaction #1 ends `d` bytes before 1 MiB, so that the cut falls, for one `d` or another,
        // after the length of each name of #2: the table, its key column and its other column,
        // which #1 used first. Each must still be the header's table, key and column.
        let target = 1 << 20
        for d in 1...64 {
            var blobSize = target - d
            for _ in 0..<3 { blobSize += (target - d) - fixture.recordLength(blobSize: blobSize) }
            guard fixture.recordLength(blobSize: blobSize) == target - d else { continue }
            let key = [History.Column("k", .integer(1))]
            let transactions = [
                fixture.transaction(
                    origin: 0, sequence: 1,
                    changes: [
                        History.Change(
                            type: .insert, table: "t", key: key,
                            values: key + [History.Column("a", .blob([UInt8](repeating: 7, count: blobSize)))],
                            generation: 1)
                    ]),
                fixture.transaction(
                    origin: 0, sequence: 2,
                    changes: [
                        History.Change(
                            type: .update, table: "t", key: key, values: [History.Column("a", .integer(2))],
                            generation: 1)
                    ]),
            ]
            let decoded = try CodecFixture.decode(try fixture.encode(transactions))
            #expect(decoded.map(\.changes) == transactions.map(\.changes), "cut \(d) bytes before 1 MiB")
        }
    }

    @Test func namesPastThoseTheDecoderRemembersDecodeTheSame() throws {
        // The decoder remembers the first 4,096 distinct names; later ones are compared with the
        // header each time they are read. Changes mixing both kinds must decode as written.
        let fixture = CodecFixture(origins: 1)
        let extra = (0..<5_000).map { "c\($0)" }
        let key = [History.Column("k", .integer(1))]
        let all = extra.enumerated().map { History.Column($1, .integer(Int64($0))) }
        let some = ["c1", "c4999", "c2500", "c4095", "c4096"].map { History.Column($0, .text($0)) }
        let transactions = [
            fixture.transaction(
                origin: 0, sequence: 1,
                changes: [History.Change(type: .insert, table: "t", key: key, values: key + all, generation: 1)]),
            fixture.transaction(
                origin: 0, sequence: 2,
                changes: [
                    History.Change(type: .update, table: "t", key: key, values: some, generation: 1),
                    History.Change(
                        type: .delete, table: "t", key: key, values: [], tombstone: key + some.reversed(),
                        generation: 2),
                ]),
        ]
        let decoded = try CodecFixture.decode(try fixture.encode(transactions, extraColumns: extra))
        #expect(decoded.map(\.changes.count) == [1, 2])
        #expect(decoded[0].changes[0].values.count == 5_001)
        #expect(Set(decoded[1].changes[0].values.map(\.name)) == Set(some.map(\.name)))
        #expect(Set(decoded[1].changes[1].tombstone!.map(\.name)) == Set(["k"] + some.map(\.name)))
    }

    @Test func changesOfTablesPastThoseWhoseNamesAreRememberedDecodeTheSame() throws {
        // Ranks are remembered for the header's first 64 tables; the others are compared each time.
        let fixture = CodecFixture(origins: 1)
        let tables = (0..<70).map { "t\($0)" }
        let key = [History.Column("k", .integer(1))]
        let changes = ["t69", "t", "t3", "t69", "t64"].map { table in
            History.Change(
                type: .update, table: table, key: key,
                values: [History.Column("a", .integer(1)), History.Column("e", .text(table))], generation: 1)
        }
        let transactions = [fixture.transaction(origin: 0, sequence: 1, changes: changes)]
        let decoded = try CodecFixture.decode(try fixture.encode(transactions, extraTables: tables))
        #expect(decoded.map(\.changes) == [changes])
    }
}
