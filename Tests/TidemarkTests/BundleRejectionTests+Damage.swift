import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Damage anywhere in a bundle: every single bit flip and every truncation of a relayed bundle is
/// refused, and leaves the store as it was.
extension BundleRejectionTests {
    /// A bundle relayed by `b` with transactions of two origins: preamble, header, a transactions
    /// frame, two attestations and the signature.
    static func relayedBundle() throws -> (receiver: TestReplica, bytes: BundleBytes, directory: TemporaryDirectory) {
        let pair = try Pair()
        _ = try pair.b.store.importBundle(at: try pair.bundle())
        let c = try TestReplica("c", in: pair.directory)
        try c.trust(pair.a, pair.b)
        let bytes = try BundleBytes(contentsOf: try pair.b.export(to: pair.directory.file("relay.tmb")).path)
        #expect(bytes.frames.map(\.type) == [0x01, 0x02, 0x03, 0x03, 0x7F])
        return (c, bytes, pair.directory)
    }

    @Test func everySingleBitFlipIsRefused() throws {
        let (receiver, bundle, directory) = try Self.relayedBundle()
        let path = directory.file("flipped.tmb")
        let reader = try StoreSnapshot.Reader(receiver.path)
        let before = try reader.everything()
        var accepted: [Int] = []
        var changed: [Int] = []
        var regions: [String: Int] = [:]
        let started = ContinuousClock.now
        // Every byte, one bit each (bit offset mod 8, so every bit position is hit in every region).
        for offset in bundle.bytes.indices {
            for bit in [offset % 8] {
                try Data(bundle.flippingBit(bit, at: offset)).write(to: URL(fileURLWithPath: path))
                regions[Self.region(of: offset, in: bundle), default: 0] += 1
                do {
                    _ = try receiver.store.importBundle(at: path)
                    accepted.append(offset)
                } catch is ExchangeError {
                }
                #expect(throws: ExchangeError.self, "byte \(offset) bit \(bit): inspect accepted it") {
                    _ = try Store.inspectBundle(at: path) { _, _ in }
                }
                if try reader.everything() != before { changed.append(offset) }
            }
        }
        print(
            "everySingleBitFlipIsRefused: \(bundle.bytes.count) flips in \(ContinuousClock.now - started); by region \(regions.sorted { $0.key < $1.key })"
        )
        #expect(accepted.isEmpty, "flips accepted at byte offsets \(accepted)")
        #expect(changed.isEmpty, "the store changed after flips at \(changed)")
        #expect(try receiver.everything() == before)
        #expect(Set(regions.keys) == ["preamble", "frame 0x1", "frame 0x2", "frame 0x3", "frame 0x7f"])
        // And the intact bundle is still accepted afterwards.
        try bundle.write(to: path)
        #expect(try receiver.store.importBundle(at: path).appliedTransactions == 3)
    }

    @Test func everyTruncationIsRefused() throws {
        let (receiver, bundle, directory) = try Self.relayedBundle()
        let path = directory.file("cut.tmb")
        let before = try receiver.everything()
        var accepted: [Int] = []
        for length in 0..<bundle.bytes.count {
            try Data(bundle.bytes.prefix(length)).write(to: URL(fileURLWithPath: path))
            do {
                _ = try receiver.store.importBundle(at: path)
                accepted.append(length)
            } catch let error as ExchangeError {
                if length >= BundleFormat.preambleLength, length % 37 == 0 {
                    #expect(error.bundleError != nil, "cut at \(length): \(error)")
                }
            }
        }
        #expect(accepted.isEmpty, "prefixes accepted: \(accepted)")
        #expect(try receiver.everything() == before)
        // One byte too many is refused as well.
        try Data(bundle.bytes + [0]).write(to: URL(fileURLWithPath: path))
        try ExchangeExpect.rejected(receiver, "trailing byte") {
            try receiver.store.importBundle(at: path)
        } matches: {
            $0.bundleError == .framing(.trailingBytes, offset: bundle.bytes.count)
        }
    }

    static func region(of offset: Int, in bundle: BundleBytes) -> String {
        guard let frame = bundle.frame(containing: offset) else { return "preamble" }
        return "frame 0x\(String(frame.type, radix: 16))"
    }
}
