import Crypto
import Foundation
import Testing
import TidemarkCore

/// A snapshot's generation floors (Protocol/bundle.md §3.3, attribute 4): they round-trip beside a
/// schema lineage, and a header that carries them where they do not belong, or breaks their rules,
/// is refused.
@Suite struct GenerationFloorTests {
    static let key = Curve25519.Signing.PrivateKey()
    static let origin = Replica.ID(publicKey: Array(key.publicKey.rawRepresentation))

    /// A bundle of `kind` with no records whose header carries `floors` (and `lineage`).
    static func bundle(
        kind: BundleFormat.Kind, floors: [GenerationFloor], lineage: [Schema.Version] = []
    ) throws -> [UInt8] {
        let header = BundleHeader(
            kind: kind, senderName: "floors", created: HLCTimestamp(milliseconds: 1_763_683_300_000, counter: 0),
            since: .zero, through: History.Token(sequences: [origin: 3]),
            tables: [BundleHeader.TableSchema(name: "notes", keyColumns: ["id"], columns: ["id", "body"])],
            ranges: [], lineage: lineage, floors: floors)
        var encoder = try BundleEncoder(sink: BufferSink(), signingKey: key, header: header)
        return try encoder.finish { _, _, _ in preconditionFailure("no transactions") }.bytes
    }

    static func header(_ file: [UInt8]) throws -> BundleHeader {
        let decoder = try BundleDecoder(BufferSource(file))
        while try decoder.nextRowState() != nil {}
        return try decoder.finish().header
    }

    @Test func floorsRoundTripInASnapshotSortedByName() throws {
        let floors = [GenerationFloor(table: "tags", floor: 2), GenerationFloor(table: "notes", floor: 14)]
        let file = try Self.bundle(kind: .snapshot, floors: floors)
        #expect(try Self.header(file).floors == floors.reversed())
        #expect(try Self.header(try Self.bundle(kind: .snapshot, floors: [])).floors.isEmpty)
    }

    @Test func floorsBesideASchemaLineageRoundTrip() throws {
        let lineage = Schema.lineage([Schema.Change([.addColumn(table: "notes", column: "due")])])
        let file = try Self.bundle(kind: .snapshot, floors: [.init(table: "notes", floor: 4)], lineage: lineage)
        let header = try Self.header(file)
        #expect(header.floors == [.init(table: "notes", floor: 4)])
        #expect(header.lineage == lineage)
    }

    @Test func floorsWhereTheyDoNotBelongOrBreakTheirRulesAreRefused() throws {
        for (kind, floors, why) in [
            (BundleFormat.Kind.changes, [GenerationFloor(table: "notes", floor: 2)], "in a changes bundle"),
            (.watermark, [.init(table: "notes", floor: 2)], "in a watermark"),
            (.snapshot, [.init(table: "notes", floor: 3)], "an odd floor"),
            (.snapshot, [.init(table: "notes", floor: 0)], "a floor of 0"),
            (.snapshot, [.init(table: "", floor: 2)], "an empty table name"),
            (.snapshot, [.init(table: "notes", floor: 2), .init(table: "notes", floor: 4)], "a table listed twice"),
        ] {
            let file = try Self.bundle(kind: kind, floors: floors)
            let error = #expect(throws: BundleError.self, "\(why)") { _ = try Self.header(file) }
            #expect(error?.rule == .badHeader, "\(why)")
        }
    }
}
