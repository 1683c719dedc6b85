import Foundation

/// A source of wall-clock time, injected so tests can replay runs with a fixed or skewed clock.
public protocol WallClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func nowMilliseconds() -> Int64
}

/// The system's real-time clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}
    public func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}
