import Foundation
import Testing
import TidemarkCore
import TidemarkTestSupport

/// `HLCTimestamp`: ordering, packing, and `next(after:now:)` with wall clocks that misbehave.
@Suite struct HLCTimestampTests {
    @Test func followsTheWallClockWhenItIsAhead() {
        let last = HLCTimestamp(milliseconds: 1_000, counter: 7)
        #expect(HLCTimestamp.next(after: last, now: 1_001) == HLCTimestamp(milliseconds: 1_001, counter: 0))
        #expect(
            HLCTimestamp.next(after: .zero, now: 1_700_000_000_000)
                == HLCTimestamp(milliseconds: 1_700_000_000_000, counter: 0))
    }

    @Test func advancesTheCounterWhenTheWallClockStandsStill() {
        let last = HLCTimestamp(milliseconds: 1_000, counter: 7)
        #expect(HLCTimestamp.next(after: last, now: 1_000) == HLCTimestamp(milliseconds: 1_000, counter: 8))
    }

    @Test func neverGoesBackwardsWhenTheWallClockDoes() throws {
        let last = HLCTimestamp(milliseconds: 5_000, counter: 2)
        let next = try #require(HLCTimestamp.next(after: last, now: 1_000))
        #expect(next == HLCTimestamp(milliseconds: 5_000, counter: 3))
        #expect(next > last)
        // Still monotonic once the clock has jumped back a long way.
        #expect(try #require(HLCTimestamp.next(after: next, now: 0)) > next)
        #expect(try #require(HLCTimestamp.next(after: next, now: -86_400_000)) > next)
    }

    @Test func counterOverflowCarriesIntoTheMilliseconds() throws {
        let full = HLCTimestamp(milliseconds: 5_000, counter: .max)
        let next = try #require(HLCTimestamp.next(after: full, now: 5_000))
        #expect(next == HLCTimestamp(milliseconds: 5_001, counter: 0))
        #expect(next > full)
        // A wall clock behind the carried reading does not pull it back either.
        #expect(HLCTimestamp.next(after: next, now: 5_000) == HLCTimestamp(milliseconds: 5_001, counter: 1))
        #expect(HLCTimestamp.next(after: full, now: 4_000) == HLCTimestamp(milliseconds: 5_001, counter: 0))
    }

    @Test func manyReadingsWithAStuckClockStayStrictlyIncreasing() throws {
        var last = HLCTimestamp(milliseconds: 10, counter: 0)
        for _ in 0..<(Int(UInt16.max) * 2 + 10) {
            let next = try #require(HLCTimestamp.next(after: last, now: 10))
            #expect(next > last)
            last = next
        }
        #expect(last.milliseconds == 12)
    }

    /// A wall clock that jumps back and forth at random: every reading is later than the one
    /// before, and never earlier than the wall clock.
    @Test func randomWallClockStaysMonotonic() throws {
        let seed = UInt64.random(in: 1...UInt64.max)
        print("HLCTimestampTests.randomWallClockStaysMonotonic seed: \(seed)")
        var rng = SplitMix64(seed: seed)
        var wall: Int64 = 1_700_000_000_000
        var last = HLCTimestamp.zero
        for step in 0..<20_000 {
            wall += Int64(rng.next() % 2_001) - 1_000
            let next = try #require(HLCTimestamp.next(after: last, now: wall), "seed \(seed) step \(step)")
            #expect(next > last, "seed \(seed) step \(step)")
            #expect(next.milliseconds >= wall, "seed \(seed) step \(step)")
            last = next
        }
    }

    /// Packed, a reading must stay a positive signed 64-bit integer: past 47 bits of milliseconds
    /// (year 6429) it would wrap to a negative one, earlier than every other, and peers would refuse
    /// every later transaction. No reading follows a wall clock past that, nor the largest reading.
    @Test func noReadingFollowsPastTheLargestOne() throws {
        let max = HLCTimestamp.maxMilliseconds
        #expect(HLCTimestamp(milliseconds: max, counter: .max).packed == Int64.max)
        #expect(HLCTimestamp.next(after: .zero, now: max + 1) == nil)
        #expect(HLCTimestamp.next(after: HLCTimestamp(milliseconds: max, counter: .max), now: 0) == nil)
        #expect(HLCTimestamp.next(after: HLCTimestamp(milliseconds: max, counter: .max), now: max + 10) == nil)
        let last = try #require(HLCTimestamp.next(after: HLCTimestamp(milliseconds: max - 1, counter: .max), now: 0))
        #expect(last == HLCTimestamp(milliseconds: max, counter: 0))
        #expect(last.packed > 0)
        #expect(HLCTimestamp.next(after: .zero, now: max) == HLCTimestamp(milliseconds: max, counter: 0))
    }

    @Test(arguments: [
        HLCTimestamp.zero, HLCTimestamp(milliseconds: 1, counter: 0),
        HLCTimestamp(milliseconds: 1_700_000_000_123, counter: 65_535),
        HLCTimestamp(milliseconds: (Int64(1) << 47) - 1, counter: 42),
    ])
    func packingRoundTrips(timestamp: HLCTimestamp) {
        #expect(HLCTimestamp(packed: timestamp.packed) == timestamp)
    }

    @Test func packedOrderMatchesReadingOrder() {
        let readings = [
            HLCTimestamp(milliseconds: 1, counter: 0), HLCTimestamp(milliseconds: 1, counter: 1),
            HLCTimestamp(milliseconds: 1, counter: .max), HLCTimestamp(milliseconds: 2, counter: 0),
        ]
        for (x, y) in zip(readings, readings.dropFirst()) {
            #expect(x < y)
            #expect(x.packed < y.packed)
        }
    }

    @Test func iso8601() {
        #expect(HLCTimestamp(milliseconds: 0, counter: 0).iso8601 == "1970-01-01T00:00:00.000Z")
        #expect(HLCTimestamp(milliseconds: 1_795_305_001_123, counter: 4).iso8601 == "2026-11-21T23:50:01.123Z")
        #expect(HLCTimestamp(milliseconds: -1, counter: 0).iso8601 == "1969-12-31T23:59:59.999Z")
        #expect(HLCTimestamp(milliseconds: 1_795_305_001_123, counter: 4).description == "2026-11-21T23:50:01.123Z#4")
    }

    @Test func fixedClockReadsItsInstant() {
        #expect(FixedWallClock(milliseconds: 42).nowMilliseconds() == 42)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(abs(SystemWallClock().nowMilliseconds() - now) < 60_000)
    }
}

/// A small seeded generator, so randomized tests can be replayed from their printed seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
