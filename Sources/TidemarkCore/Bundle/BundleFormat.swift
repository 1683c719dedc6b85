/// Constants of the change-bundle format. `Protocol/bundle.md` is the specification; section
/// numbers below refer to it.
public enum BundleFormat {
    /// §3.1: the first 8 bytes of every bundle (PNG-style, so text-mode transfers are detected).
    public static let magic: [UInt8] = [0x89, 0x54, 0x4D, 0x42, 0x0D, 0x0A, 0x1A, 0x0A]
    /// §3.1: the only format version this build reads and writes.
    public static let version: UInt16 = 1
    /// §3.1: preamble length: magic, version, flags, sender public key.
    public static let preambleLength = 8 + 2 + 2 + 32

    /// §3.2: frame types.
    public enum FrameType: UInt8, Sendable {
        case header = 0x01
        case transactions = 0x02
        case attestation = 0x03
        case signature = 0x7F
    }

    /// §3.2: frame flag bit 0: the payload is raw-DEFLATE compressed.
    public static let compressedFlag: UInt8 = 0x01
    /// §3.2: the largest frame payload, and the largest decompressed chunk.
    public static let maxFrameLength = 16 * 1024 * 1024
    /// §4.1: the largest TEXT or BLOB value.
    public static let maxValueLength = 64 * 1024 * 1024
    /// §4.1, R36: the most bytes of TEXT and BLOB values, key values included, that one change or
    /// row state may carry together. Without it a record of many values of `maxValueLength` each
    /// would make a reader hold gigabytes before it could check any signature.
    public static let maxRecordValueBytes = 64 * 1024 * 1024
    /// §4.1: the longest name (table, column, author, context, replica name), in bytes.
    public static let maxNameLength = 4096
    /// §4.3: the most key columns or value columns in one change, and columns of a header table:
    /// the largest column limit SQLite can be built with (SQLITE_MAX_COLUMN), so any table SQLite
    /// allows fits.
    public static let maxColumns = 32767
    /// §3.4: the most origin ranges and tables a header may list.
    public static let maxHeaderEntries = 4096

    /// §3.3: bundle kinds.
    public enum Kind: UInt8, Sendable {
        /// Transactions a peer lacks.
        case changes = 1
        /// The state of every row a replica knows (§4.4), for catching up past pruned history.
        case snapshot = 2
        /// A replica's signed watermark: the token it has applied; carries no transactions.
        case watermark = 3
    }

    /// §5.1: the domain-separation prefix of the message a sender signs for a whole bundle.
    public static let bundleSignaturePrefix = Array("tidemark-bundle-v1".utf8) + [0]
    /// §5.2: the domain-separation prefix of the chain genesis and of attestation messages.
    public static let chainPrefix = Array("tidemark-chain-v1".utf8) + [0]

    /// The size of uncompressed record data the writer collects before compressing a chunk.
    static let chunkTarget = 1024 * 1024
}
