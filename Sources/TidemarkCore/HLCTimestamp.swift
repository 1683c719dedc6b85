import Foundation

/// A hybrid-logical-clock reading: wall-clock milliseconds since 1970 plus a counter that orders
/// events within one millisecond. Readings from one clock never go backwards.
public struct HLCTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var milliseconds: Int64
    /// Orders readings that share a millisecond.
    public var counter: UInt16

    /// Creates a reading.
    public init(milliseconds: Int64, counter: UInt16) {
        self.milliseconds = milliseconds
        self.counter = counter
    }

    /// The zero reading, before every real one.
    public static let zero = HLCTimestamp(milliseconds: 0, counter: 0)

    /// The reading packed into one integer (`milliseconds << 16 | counter`), ordered like the reading.
    public var packed: Int64 { milliseconds << 16 | Int64(counter) }

    /// Unpacks a value made by `packed`.
    public init(packed: Int64) {
        self.milliseconds = packed >> 16
        self.counter = UInt16(truncatingIfNeeded: packed & 0xffff)
    }

    /// The wall-clock part as a date.
    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// ISO-8601 with milliseconds, in UTC: `2026-11-21T23:50:01.123Z`.
    public var iso8601: String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let ms = milliseconds - seconds * 1000
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ms))
    }

    public var description: String { "\(iso8601)#\(counter)" }

    public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool { lhs.packed < rhs.packed }

    /// The largest wall-clock part a reading can have: packed, it must stay a positive signed
    /// 64-bit integer (Protocol/bundle.md §2.5), which leaves 47 bits of milliseconds, until
    /// 6429-10-17T02:45:55.327Z. A reading past it would wrap to a negative one, earlier than every other.
    public static let maxMilliseconds: Int64 = Int64.max >> 16

    /// The next reading after `last`, given the wall clock reads `now` milliseconds: the wall clock
    /// when it is ahead, otherwise `last` with its counter advanced. Always later than `last`; nil
    /// when no reading can be: the wall clock reads past `maxMilliseconds`, or `last` is the
    /// largest reading there is.
    public static func next(after last: HLCTimestamp, now: Int64) -> HLCTimestamp? {
        if now > last.milliseconds {
            return now <= maxMilliseconds ? HLCTimestamp(milliseconds: now, counter: 0) : nil
        }
        if last.counter < .max { return HLCTimestamp(milliseconds: last.milliseconds, counter: last.counter + 1) }
        return last.milliseconds < maxMilliseconds ? HLCTimestamp(milliseconds: last.milliseconds + 1, counter: 0) : nil
    }
}
