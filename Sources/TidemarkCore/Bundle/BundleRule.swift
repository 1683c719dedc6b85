/// The rejection rules of Protocol/bundle.md §7: every refusal of a bundle names the one it broke,
/// so a reader of another implementation, and the vectors' manifest, can tell which check failed.
public enum BundleRule: String, Sendable, CaseIterable, CustomStringConvertible {
    /// R1: a file whose first 8 bytes are not the magic, or that has fewer.
    case badMagic = "bad-magic"
    /// R2: a format version other than 1.
    case unsupportedVersion = "unsupported-version"
    /// R3: a reserved flag bit set, in the preamble or in a frame head.
    case reservedFlags = "reserved-flags"
    /// R4: a file that ends inside the preamble or inside a frame.
    case truncated = "truncated"
    /// R5: a frame type other than 01, 02, 03, 7F.
    case unknownFrameType = "unknown-frame-type"
    /// R6: a frame length above 16 MiB (checked before reading the payload).
    case frameTooLong = "frame-too-long"
    /// R7: a compressed payload shorter than 4 bytes, declaring 0 or more than 16 MiB, that is not raw DEFLATE, has
    /// bytes after the end of the stream, or inflates to another size than declared.
    case badCompression = "bad-compression"
    /// R8: a TRANSACTIONS frame in the record stream whose payload is empty (after decompression).
    case emptyFrame = "empty-frame"
    /// R9: frames missing, repeated or out of the order HEADER, TRANSACTIONS…, one ATTESTATION per range, SIGNATURE
    /// (checked on every frame through the SIGNATURE frame before any attestation is checked).
    case frameOrder = "frame-order"
    /// R10: a SIGNATURE frame that is compressed or whose payload is not 64 bytes.
    case badSignatureFrame = "bad-signature-frame"
    /// R11: any byte after the SIGNATURE frame.
    case trailingBytes = "trailing-bytes"
    /// R12: a bundle kind other than 1 (changes), 2 (snapshot) or 3 (watermark); a kind 2 bundle with origin ranges.
    case unsupportedKind = "unsupported-kind"
    /// R13: a header payload that ends early or has bytes left over; a key column listed twice or not among the
    /// table's columns; a table listed twice; a kind 3 (watermark) bundle with origin ranges; a schema lineage that
    /// breaks schema.md §4; a row digest outside a watermark or that breaks exchange.md §8.3.
    case badHeader = "bad-header"
    /// R14: a token whose replica ids are not strictly ascending, or with a sequence number of 0 or above 2^63 − 1.
    case badToken = "bad-token"
    /// R15: a range with first 0, last < first or last > 2^63 − 1; ranges not in strictly ascending order of origin;
    /// a range from #1 whose previous is not the genesis hash.
    case badRange = "bad-range"
    /// R16: a name, value, attribute or change count above its limit, or more than 4096 tables, ranges or token
    /// entries (checked before reading what the length announces).
    case limitExceeded = "limit-exceeded"
    /// R17: a varint that is not minimal, or exceeds 64 bits.
    case badVarint = "bad-varint"
    /// R18: in a transaction record, a sequence number above 2^63 − 1 or a process id above 2^32 − 1.
    case numberOutOfRange = "number-out-of-range"
    /// R19: an empty name.
    case emptyName = "empty-name"
    /// R20: a name or TEXT value that is not well-formed UTF-8.
    case invalidUTF8 = "invalid-utf8"
    /// R21: a presence byte other than 00 or 01, a row state's clock-present byte included.
    case badPresenceByte = "bad-presence-byte"
    /// R22: a value tag other than 00–04.
    case unknownValueTag = "unknown-value-tag"
    /// R23: a change type other than 1, 2, 3.
    case unknownChangeType = "unknown-change-type"
    /// R24: a generation of 0 or above 2^63 − 1, even for an insert or update, or odd for a delete; a row state's
    /// generation of 0 or above 2^63 − 1.
    case badGeneration = "bad-generation"
    /// R25: a header table without key columns or with more than 32767 columns; a change or row state with no key
    /// column, more than 32767 key columns or more than 32767 value columns.
    case badColumnCount = "bad-column-count"
    /// R26: header columns not strictly ascending; a change of a table not in the header, whose key column names
    /// differ from the header's (count, order or bytes), whose value columns are not strictly ascending, are key
    /// columns or are not the table's; an update without columns; a row state breaking the same rules, or a tombstone
    /// row state with columns; any record in a watermark (kind 3).
    case columnsNotCanonical = "columns-not-canonical"
    /// R27: a record attribute with an even id it does not know; a header attribute other than one schema lineage (id
    /// 2) or row digest (id 3).
    case unknownAttribute = "unknown-attribute"
    /// R28: a record stream that ends inside a record (transaction or row state).
    case recordTruncated = "record-truncated"
    /// R29: a transaction of an origin without a range, or after its range's last.
    case outsideRanges = "outside-ranges"
    /// R30: a transaction that is not its origin's next expected one (gap, repeat, reordering).
    case sequenceGap = "sequence-gap"
    /// R31: a timestamp not greater than the previous one of its origin in the bundle, or not greater than 0 for the
    /// first.
    case clockNotIncreasing = "clock-not-increasing"
    /// R32: a range not all of whose transactions are present.
    case rangeIncomplete = "range-incomplete"
    /// R33: a range whose transactions, chained from its previous, do not hash to its attestation's head.
    case chainMismatch = "chain-mismatch"
    /// R34: an ATTESTATION payload that is malformed, names another origin or sequence than its range, or whose
    /// signature does not verify under the range's key.
    case badAttestation = "bad-attestation"
    /// R35: a file signature that does not verify under the preamble's key.
    case badSignature = "bad-signature"
    /// R36: a change or row state whose TEXT and BLOB values, key values included, declare more than 64 MiB in total
    /// (checked before reading the value that passes the limit).
    case recordTooLarge = "record-too-large"
    /// R37: a transaction whose schema version attribute is missing, repeated, or not the id of the version the
    /// header's schema runs place it under.
    case schemaMismatch = "schema-mismatch"

    /// Its number in §7, `R1` … .
    public var number: String { "R\(Self.allCases.firstIndex(of: self)! + 1)" }

    public var description: String { "\(number) \(rawValue)" }
}
