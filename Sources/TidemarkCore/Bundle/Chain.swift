import Crypto

/// The per-origin hash chain (§5.2) that lets any receiver check a relayed transaction came from
/// its origin unaltered, in order and without gaps.
public enum Chain {
    /// The chain hash before an origin's first transaction.
    public static func genesis(_ origin: Replica.ID) -> [UInt8] {
        Array(SHA256.hash(data: BundleFormat.chainPrefix + origin.bytes))
    }

    /// The message an origin signs to attest its chain head after transaction `sequence`.
    public static func attestationMessage(origin: Replica.ID, sequence: Int64, head: [UInt8]) -> [UInt8] {
        BundleFormat.chainPrefix + origin.bytes + RecordEncoding.uint64BigEndian(UInt64(sequence)) + head
    }
}
