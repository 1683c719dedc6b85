/// The clock of one write to one column, ordered by hybrid timestamp and then by replica id, a
/// total order that every replica computes the same way (Protocol/merge.md §1).
public struct MergeClock: Hashable, Comparable, Sendable {
    /// The writing transaction's timestamp.
    public var timestamp: HLCTimestamp
    /// The writing replica.
    public var origin: Replica.ID

    /// Creates a clock.
    public init(timestamp: HLCTimestamp, origin: Replica.ID) {
        self.timestamp = timestamp
        self.origin = origin
    }

    /// The clock of an adoption's write (Protocol/merge.md §1.4): a row its table held when it
    /// started being tracked, recorded by the transaction of `timestamp`. It orders below every
    /// other write's clock, and among adoptions as their timestamps do: its timestamp is the
    /// transaction's moved below zero, which no transaction's timestamp is.
    public static func adoption(timestamp: HLCTimestamp, origin: Replica.ID) -> MergeClock {
        MergeClock(timestamp: HLCTimestamp(packed: timestamp.packed &+ Int64.min), origin: origin)
    }

    /// Whether this is an adoption's clock.
    public var isAdoption: Bool { timestamp.packed < 0 }

    /// The timestamp of the transaction that wrote: this clock's, or an adoption's own.
    public var writtenAt: HLCTimestamp {
        isAdoption ? HLCTimestamp(packed: timestamp.packed &- Int64.min) : timestamp
    }

    public static func < (lhs: MergeClock, rhs: MergeClock) -> Bool {
        lhs.timestamp != rhs.timestamp ? lhs.timestamp < rhs.timestamp : lhs.origin < rhs.origin
    }
}

/// A total order on row keys, used to break ties deterministically: keys compare by their
/// canonical encoding (Protocol/bundle.md §4.1), bytewise.
public enum KeyOrder {
    /// The canonical bytes of a key's values.
    public static func bytes(_ values: [SQLValue]) -> [UInt8] {
        var out: [UInt8] = []
        for value in values { RecordEncoding.value(value, &out) }
        return out
    }

    /// Whether key `a` orders before key `b`.
    public static func precedes(_ a: [SQLValue], _ b: [SQLValue]) -> Bool {
        bytes(a).lexicographicallyPrecedes(bytes(b))
    }
}
