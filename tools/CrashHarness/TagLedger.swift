/// What the harness has asked replicas to write: for each tag, how many rows its one transaction
/// inserts, which replica wrote it, and whether a run of that write has been seen to succeed.
struct TagLedger {
    /// One write transaction.
    struct Entry {
        /// The rows the transaction inserts.
        var rowCount: Int
        /// The index of the replica that ran it.
        var origin: Int
        /// Whether a `sync exec` of it exited 0 (it must then never be lost).
        var acknowledged: Bool
    }

    private(set) var entries: [String: Entry] = [:]

    /// Records a write before it runs.
    mutating func register(_ tag: String, rowCount: Int, origin: Int) {
        entries[tag] = Entry(rowCount: rowCount, origin: origin, acknowledged: false)
    }

    /// Records that a run of the write exited 0.
    mutating func acknowledge(_ tag: String) {
        entries[tag]?.acknowledged = true
    }

    /// The row count of a tag, or nil for a tag the harness never wrote.
    func rowCount(of tag: String) -> Int? { entries[tag]?.rowCount }

    /// The acknowledged tags written by `origin`.
    func acknowledged(by origin: Int) -> Set<String> {
        Set(entries.filter { $0.value.acknowledged && $0.value.origin == origin }.keys)
    }

    /// Every tag a run of whose write exited 0.
    var acknowledgedTags: Set<String> { Set(entries.filter { $0.value.acknowledged }.keys) }
}
