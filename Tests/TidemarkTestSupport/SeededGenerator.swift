import Foundation

/// A small, fast, replayable random number generator (SplitMix64) for randomized tests.
///
/// Tests take their seed from `seed(environment:)`: the variable when set (to replay a failure),
/// otherwise a fresh one. They print the seed so any run can be replayed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seed in `variable` (decimal or 0x-hex) when set, else a random one.
    public static func seed(environment variable: String = "TIDEMARK_SEED") -> UInt64 {
        if let text = ProcessInfo.processInfo.environment[variable]?.trimmingCharacters(in: .whitespaces), !text.isEmpty
        {
            if text.lowercased().hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) { return value }
            if let value = UInt64(text) { return value }
        }
        return UInt64.random(in: 0...UInt64.max)
    }
}
