/// Why a bundle was refused by the decoder or verifier. Cases nest by layer: the file framing,
/// a record inside it, or the cryptographic checks. Every case names where (a byte offset in the
/// file, or a transaction) so a user can report it.
public enum BundleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file's framing is wrong.
    case framing(Framing, offset: Int)
    /// A transaction record is malformed; `offset` counts decompressed record bytes.
    case record(Record, offset: Int)
    /// A check of signatures, chains or origins failed.
    case verification(Verification)

    /// Framing defects (§3).
    public enum Framing: Sendable, Equatable {
        case notABundle
        case unsupportedVersion(UInt16)
        case reservedFlags
        case truncated
        case unknownFrameType(UInt8)
        case frameTooLong(Int)
        case badCompression
        case unexpectedFrame(UInt8)
        case missingHeader
        case trailingBytes
        /// A TRANSACTIONS frame whose payload is empty (R8).
        case emptyFrame
        /// A SIGNATURE frame that is compressed or not 64 bytes (R10).
        case badSignatureFrame
        /// An ATTESTATION payload that does not parse, its varint included (R34, §5.2).
        case malformedAttestation
        /// The header breaks `rule` (R13 `bad-header` unless a more specific rule applies, such as
        /// R14 for a token or R16 for a limit), for the reason given.
        case badHeader(String, rule: BundleRule = .badHeader)
    }

    /// Record defects (§4).
    public enum Record: Sendable, Equatable {
        case truncated
        case badVarint
        /// A sequence number above 2^63 − 1 or a process id above 2^32 − 1 (R18).
        case numberOutOfRange(String)
        case unknownValueTag(UInt8)
        case invalidUTF8
        case lengthTooLarge(Int)
        case unknownChangeType(UInt8)
        case badGeneration(UInt64)
        case tooManyColumns(Int)
        case columnsNotCanonical(String)
        /// A record where the bundle's kind allows none of its kind: any record in a watermark
        /// (R26, §4.5), or records left after the reader asked to finish.
        case unexpectedRecord(String)
        case unknownAttribute(UInt64)
        case badPresenceByte(UInt8)
        case emptyName
        /// A change or row state whose TEXT and BLOB values, key values included, would total
        /// `bytes`, more than `BundleFormat.maxRecordValueBytes` (§4.1, R36). Raised at the length
        /// of the value that passes the limit, before its bytes are read.
        case recordTooLarge(bytes: Int)
        /// A transaction's schema version attribute is missing, repeated or differs from the
        /// version the header's schema runs place it under (Protocol/schema.md §4, R37).
        case schemaVersionMismatch(String)
    }

    /// Verification failures (§5).
    public enum Verification: Sendable, Equatable {
        case badSignature
        case badAttestation(origin: String)
        case chainMismatch(origin: String)
        case transactionOutsideRanges(origin: String, sequence: Int64)
        case sequenceGap(origin: String, expected: Int64, found: Int64)
        case rangeIncomplete(origin: String)
        case clockNotIncreasing(origin: String, sequence: Int64)
    }

    /// The rule of Protocol/bundle.md §7 that the bundle broke.
    public var rule: BundleRule {
        switch self {
        case .framing(let f, _):
            switch f {
            case .notABundle: .badMagic
            case .unsupportedVersion: .unsupportedVersion
            case .reservedFlags: .reservedFlags
            case .truncated: .truncated
            case .unknownFrameType: .unknownFrameType
            case .frameTooLong: .frameTooLong
            case .badCompression: .badCompression
            case .unexpectedFrame, .missingHeader: .frameOrder
            case .trailingBytes: .trailingBytes
            case .emptyFrame: .emptyFrame
            case .badSignatureFrame: .badSignatureFrame
            case .malformedAttestation: .badAttestation
            case .badHeader(_, let rule): rule
            }
        case .record(let r, _):
            switch r {
            case .truncated: .recordTruncated
            case .badVarint: .badVarint
            case .numberOutOfRange: .numberOutOfRange
            case .unknownValueTag: .unknownValueTag
            case .invalidUTF8: .invalidUTF8
            case .lengthTooLarge: .limitExceeded
            case .unknownChangeType: .unknownChangeType
            case .badGeneration: .badGeneration
            case .tooManyColumns: .badColumnCount
            case .columnsNotCanonical, .unexpectedRecord: .columnsNotCanonical
            case .unknownAttribute: .unknownAttribute
            case .badPresenceByte: .badPresenceByte
            case .emptyName: .emptyName
            case .recordTooLarge: .recordTooLarge
            case .schemaVersionMismatch: .schemaMismatch
            }
        case .verification(let v):
            switch v {
            case .badSignature: .badSignature
            case .badAttestation: .badAttestation
            case .chainMismatch: .chainMismatch
            case .transactionOutsideRanges: .outsideRanges
            case .sequenceGap: .sequenceGap
            case .rangeIncomplete: .rangeIncomplete
            case .clockNotIncreasing: .clockNotIncreasing
            }
        }
    }

    /// The error as a sentence naming the rule broken and where. Long by design: one message per
    /// case, which reads best as one switch.
    public var description: String {
        switch self {
        case .framing(let f, let offset):
            let what: String
            switch f {
            case .notABundle: what = "not a Tidemark bundle (bad magic)"
            case .unsupportedVersion(let v):
                what = "unsupported format version \(v) (this build reads version \(BundleFormat.version))"
            case .reservedFlags: what = "reserved flag bits are set"
            case .truncated: what = "the file ends early (truncated or still being copied)"
            case .unknownFrameType(let t): what = "unknown frame type 0x\(String(t, radix: 16))"
            case .frameTooLong(let n): what = "frame length \(n) exceeds the limit of \(BundleFormat.maxFrameLength)"
            case .badCompression: what = "a compressed frame does not inflate to its declared length"
            case .unexpectedFrame(let t): what = "frame type 0x\(String(t, radix: 16)) is out of order"
            case .missingHeader: what = "the header frame is missing"
            case .trailingBytes: what = "bytes follow the signature frame"
            case .emptyFrame: what = "an empty transactions frame"
            case .badSignatureFrame: what = "the signature frame must be 64 bytes, uncompressed"
            case .malformedAttestation: what = "a malformed attestation"
            case .badHeader(let why, _): what = "bad header: \(why)"
            }
            return "\(what) at byte \(offset)"
        case .record(let r, let offset):
            let what: String
            switch r {
            case .truncated: what = "a transaction record is cut short"
            case .badVarint: what = "a varint is malformed or not minimal"
            case .numberOutOfRange(let what_): what = "\(what_) is out of range"
            case .unknownValueTag(let t): what = "unknown value tag 0x\(String(t, radix: 16))"
            case .invalidUTF8: what = "text is not valid UTF-8"
            case .lengthTooLarge(let n): what = "a length of \(n) bytes exceeds the limit"
            case .unknownChangeType(let t): what = "unknown change type \(t)"
            case .badGeneration(let g):
                what = "generation \(g) does not fit the change type (odd for inserts and updates, even for deletes)"
            case .tooManyColumns(let n): what = "\(n) columns exceed the limit of \(BundleFormat.maxColumns)"
            case .columnsNotCanonical(let why): what = "columns are not in canonical form: \(why)"
            case .unexpectedRecord(let why): what = "unexpected record: \(why)"
            case .unknownAttribute(let id): what = "unknown attribute \(id)"
            case .badPresenceByte(let b): what = "presence byte must be 0 or 1, found \(b)"
            case .emptyName: what = "a name is empty"
            case .schemaVersionMismatch(let why): what = "schema version mismatch: \(why)"
            case .recordTooLarge(let n):
                what =
                    "a change or row state carries at least \(n) bytes of values, more than the limit of \(BundleFormat.maxRecordValueBytes) for one record"
            }
            return "\(what) at record byte \(offset)"
        case .verification(let v):
            switch v {
            case .badSignature:
                return "the bundle's signature does not verify (the file was altered or not signed by its sender)"
            case .badAttestation(let o): return "the chain attestation of origin \(o) does not verify"
            case .chainMismatch(let o):
                return
                    "origin \(o)'s transactions do not hash to the head its owner signed (altered, reordered or dropped)"
            case .transactionOutsideRanges(let o, let s):
                return "transaction \(o) #\(s) is outside the ranges the header declares"
            case .sequenceGap(let o, let e, let f): return "origin \(o)'s transactions skip from #\(e) to #\(f)"
            case .rangeIncomplete(let o): return "origin \(o)'s declared range is not complete"
            case .clockNotIncreasing(let o, let s):
                return "origin \(o)'s transaction #\(s) is not later than the one before"
            }
        }
    }
}
