import Tidemark

/// A clock that always reads the same instant: replayable tests, and a model of a stuck clock.
public struct FixedWallClock: WallClock {
    /// The reading.
    public let milliseconds: Int64
    /// Creates a clock stuck at `milliseconds`.
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }
    public func nowMilliseconds() -> Int64 { milliseconds }
}
