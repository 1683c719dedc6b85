import Crypto

/// Computes an origin's chain hash over transactions without writing a bundle (§5.2): the same
/// canonical record bytes the encoder writes, hashed but not kept.
public struct ChainHasher {
    private var hasher = SHA256()
    private var buffer: [UInt8] = []
    private let schema: [UInt8]?

    /// Starts hashing a transaction that follows chain hash `previous`, written under the schema
    /// version with id `schema` (nil: the initial schema).
    public init(
        previous: [UInt8], origin: Replica.ID, sequence: Int64, timestamp: HLCTimestamp, author: String?,
        contextName: String?,
        processID: Int32?, changeCount: Int, schema: [UInt8]? = nil
    ) {
        self.schema = schema
        hasher.update(data: previous)
        RecordEncoding.transactionPrefix(
            origin: origin, sequence: sequence, timestamp: timestamp, author: author, contextName: contextName,
            processID: processID, changeCount: changeCount, &buffer)
    }

    /// Adds the next change.
    public mutating func add(_ change: History.Change) {
        RecordEncoding.change(change, &buffer)
        if buffer.count >= 64 * 1024 {
            hasher.update(data: buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// The chain hash after the transaction.
    public mutating func finish() -> [UInt8] {
        RecordEncoding.transactionAttributes(schema: schema, &buffer)
        hasher.update(data: buffer)
        return Array(hasher.finalize())
    }
}
