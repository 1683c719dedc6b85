import Foundation
import Testing
import TidemarkCore

/// `Varint` (unsigned LEB128, canonical only) and `Base64URL`.
@Suite struct VarintTests {
    static let encodings: [(value: UInt64, bytes: [UInt8])] = [
        (0, [0x00]),
        (1, [0x01]),
        (127, [0x7f]),
        (128, [0x80, 0x01]),
        (300, [0xac, 0x02]),
        (16_383, [0xff, 0x7f]),
        (16_384, [0x80, 0x80, 0x01]),
        (UInt64(Int64.max), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
        (UInt64.max, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
    ]

    @Test(arguments: encodings)
    func knownEncodings(value: UInt64, bytes: [UInt8]) throws {
        var out: [UInt8] = []
        Varint.append(value, to: &out)
        #expect(out == bytes)
        let (read, used) = try #require(Varint.read(bytes, at: 0))
        #expect(read == value)
        #expect(used == bytes.count)
    }

    @Test func readsAtAnOffsetAndStopsAtTheEndOfTheVarint() throws {
        let bytes: [UInt8] = [0xee, 0xac, 0x02, 0x05]
        let (value, used) = try #require(Varint.read(bytes, at: 1))
        #expect(value == 300)
        #expect(used == 2)
    }

    @Test func roundTripsSeededRandomValues() throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        print("VarintTests.roundTripsSeededRandomValues seed: \(seed)")
        var rng = SplitMix64(seed: seed)
        for _ in 0..<10_000 {
            let value = rng.next() >> (rng.next() % 64)
            var out: [UInt8] = []
            Varint.append(value, to: &out)
            let decoded = try #require(Varint.read(out, at: 0), "seed \(seed) value \(value)")
            #expect(decoded.0 == value && decoded.1 == out.count, "seed \(seed) value \(value)")
        }
    }

    static let broken: [(label: String, bytes: [UInt8])] = [
        ("redundant trailing zero", [0x80, 0x00]),
        ("redundant zeros after a value", [0x81, 0x80, 0x00]),
        ("zero padded to 2 bytes", [0x80, 0x00]),
        ("runs past the end", [0x80]),
        ("empty", []),
        ("more than 64 bits in the 10th byte", [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
        ("11 bytes", [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
    ]

    @Test(arguments: broken)
    func rejectsNonCanonicalOrBrokenVarints(label: String, bytes: [UInt8]) {
        #expect(Varint.read(bytes, at: 0) == nil, "\(label)")
    }

    @Test func base64URLUsesTheURLAlphabetWithoutPadding() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xfe, 0x00]
        let text = Base64URL.encode(bytes)
        #expect(text == "-__-AA")
        #expect(Base64URL.decode(text) == bytes)
        #expect(Base64URL.decode("+//+AA") == nil)
        #expect(Base64URL.decode("-__-AA==") == nil)
        #expect(Base64URL.decode("") == [])
    }
}
