import Crypto
import Foundation
import Tidemark

/// A bundle file's bytes split into its preamble and frames (Protocol/bundle.md §3), for tests that
/// damage bundles on purpose and, where a test needs the damage to be the *only* defect, sign them
/// again so the signature still verifies.
public struct BundleBytes: Sendable, Equatable {
    /// One frame: its type and flags bytes, where it starts, and where its payload lies in `bytes`.
    public struct Frame: Sendable, Equatable {
        public var type: UInt8
        public var flags: UInt8
        /// The offset of the frame's type byte.
        public var start: Int
        /// The payload (still compressed, if the frame is) within the file.
        public var payload: Range<Int>
        /// The offsets of the four length bytes.
        public var lengthField: Range<Int> { start + 2..<start + 6 }
    }

    /// Frame type bytes (§3.2).
    public static let headerType: UInt8 = 0x01
    public static let transactionsType: UInt8 = 0x02
    public static let attestationType: UInt8 = 0x03
    public static let signatureType: UInt8 = 0x7F

    /// The whole file.
    public var bytes: [UInt8]
    /// The frames, parsed when the bytes were read (mutations do not re-parse).
    public let frames: [Frame]

    /// Splits a well-formed bundle; fails if its framing is broken.
    public init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        var frames: [Frame] = []
        var offset = BundleFormat.preambleLength
        guard bytes.count >= offset, Array(bytes.prefix(8)) == BundleFormat.magic else {
            throw Malformed(reason: "no preamble")
        }
        while offset < bytes.count {
            guard offset + 6 <= bytes.count else { throw Malformed(reason: "frame head cut at \(offset)") }
            let length =
                Int(bytes[offset + 2]) << 24 | Int(bytes[offset + 3]) << 16 | Int(bytes[offset + 4]) << 8
                | Int(bytes[offset + 5])
            guard offset + 6 + length <= bytes.count else {
                throw Malformed(reason: "frame at \(offset) runs past the end")
            }
            frames.append(
                Frame(
                    type: bytes[offset], flags: bytes[offset + 1], start: offset,
                    payload: offset + 6..<offset + 6 + length))
            offset += 6 + length
        }
        guard frames.last?.type == Self.signatureType else { throw Malformed(reason: "no signature frame at the end") }
        self.frames = frames
    }

    /// Reads a bundle file.
    public init(contentsOf path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Malformed(reason: "cannot read \(path)")
        }
        try self.init([UInt8](data))
    }

    /// Writes the (possibly damaged) bytes to `path`.
    public func write(to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The frames of one type.
    public func frames(ofType type: UInt8) -> [Frame] { frames.filter { $0.type == type } }

    /// The header frame's payload (headers are never compressed).
    public var headerPayload: Range<Int> { frames[0].payload }

    /// The sender's public key in the preamble.
    public var senderKey: Range<Int> { 12..<44 }

    /// The frame that contains `offset`, or nil for the preamble.
    public func frame(containing offset: Int) -> Frame? {
        frames.first { $0.start <= offset && offset < $0.payload.upperBound }
    }

    /// The bytes with one bit flipped.
    public func flippingBit(_ bit: Int, at offset: Int) -> [UInt8] {
        var copy = bytes
        copy[offset] ^= UInt8(1 << (bit % 8))
        return copy
    }

    /// Replaces the signature so that it verifies again under `key` over the current bytes before
    /// the signature frame (§5.1): what a sender holding `key` would have signed.
    public mutating func resign(with key: KeyFile) throws {
        let signature = frames.last!
        let digest = Array(SHA256.hash(data: bytes[0..<signature.start]))
        let signed = try key.privateKey.signature(for: BundleFormat.bundleSignaturePrefix + digest)
        precondition(signed.count == 64 && signature.payload.count == 64)
        bytes.replaceSubrange(signature.payload, with: Array(signed))
    }

    /// A frame layout this helper cannot handle.
    public struct Malformed: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { "not a well-formed bundle: \(reason)" }
    }
}

// MARK: - Record bytes of stored (uncompressed) bundles

extension BundleBytes {
    /// For a bundle written with compression level 0 (`BundleCrafter`), the file ranges holding
    /// the raw transaction-record bytes, inside the DEFLATE stored blocks of its transactions frames.
    public func storedRecordRanges() throws -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        for frame in frames(ofType: Self.transactionsType) {
            var offset = frame.payload.lowerBound + 4  // the 4-byte inflated length
            var final = false
            while !final {
                guard offset + 5 <= frame.payload.upperBound else {
                    throw Malformed(reason: "stored block cut at \(offset)")
                }
                let blockHeader = bytes[offset]
                guard blockHeader >> 1 & 3 == 0 else {
                    throw Malformed(reason: "block at \(offset) is compressed; craft with level 0")
                }
                final = blockHeader & 1 == 1
                let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8
                let start = offset + 5
                guard start + length <= frame.payload.upperBound else {
                    throw Malformed(reason: "stored block runs past its frame")
                }
                if length > 0 { ranges.append(start..<start + length) }
                offset = start + length
            }
        }
        return ranges
    }

    /// The concatenated raw record bytes of a level-0 bundle.
    public func storedRecords() throws -> [UInt8] {
        try storedRecordRanges().flatMap { bytes[$0] }
    }

    /// Replaces the first occurrence of `marker` in the raw records of a level-0 bundle with
    /// `replacement` of the same length. Returns false if the marker was not found within one block.
    public mutating func replaceInRecords(_ marker: [UInt8], with replacement: [UInt8]) throws -> Bool {
        precondition(marker.count == replacement.count, "a replacement must keep the length")
        for range in try storedRecordRanges() {
            let block = Array(bytes[range])
            guard block.count >= marker.count else { continue }
            for i in 0...(block.count - marker.count) where Array(block[i..<i + marker.count]) == marker {
                bytes.replaceSubrange(range.lowerBound + i..<range.lowerBound + i + marker.count, with: replacement)
                return true
            }
        }
        return false
    }

    /// After the records of a level-0 bundle holding exactly one transaction of `key`'s replica
    /// (sequence 1) were edited: recomputes that origin's chain head over the edited records,
    /// signs a new attestation for it and then the bundle, so that only the edit itself is wrong.
    public mutating func reattestSingleTransaction(with key: KeyFile) throws {
        let origin = Replica.ID(publicKey: key.publicKey)
        var hasher = SHA256()
        hasher.update(data: Chain.genesis(origin))
        hasher.update(data: try storedRecords())
        let head = Array(hasher.finalize())
        let attestations = frames(ofType: Self.attestationType)
        guard attestations.count == 1 else {
            throw Malformed(reason: "expected one attestation, found \(attestations.count)")
        }
        // Attestation payload (§3.5): origin (16), sequence varint (1 byte for #1), head (32), signature (64).
        let payload = attestations[0].payload
        guard payload.count == 16 + 1 + 32 + 64, bytes[payload.lowerBound + 16] == 1 else {
            throw Malformed(reason: "the attestation is not for transaction #1")
        }
        let attestation = try Attestation.sign(origin: key.privateKey, sequence: 1, head: head)
        bytes.replaceSubrange(payload.lowerBound + 17..<payload.lowerBound + 49, with: head)
        bytes.replaceSubrange(payload.lowerBound + 49..<payload.upperBound, with: attestation.signature)
        try resign(with: key)
    }
}

// MARK: - Crafting bundles with the codec

/// Writes bundles directly with `BundleEncoder`, for defects an export can never produce.
public enum BundleCrafter {
    /// A bundle from `key`'s replica (named `senderName`) holding its transactions #1… — one per
    /// element of `transactions` — with the given table schemas, schema `lineage` and the runs
    /// that say under which version of it each transaction was written (none: the initial
    /// schema). Compression level 0 leaves the record bytes readable (and editable) in the file.
    public static func bundle(
        key: KeyFile, senderName: String, tables: [BundleHeader.TableSchema], transactions: [[History.Change]],
        lineage: [Schema.Version] = [], schemaRuns: [BundleHeader.SchemaRun] = [], author: String? = "crafter",
        compressionLevel: Int32 = 0
    ) throws -> [UInt8] {
        let origin = Replica.ID(publicKey: key.publicKey)
        let count = Int64(transactions.count)
        let start = Int64(1_700_000_000_000)
        let header = BundleHeader(
            kind: .changes, senderName: senderName, created: HLCTimestamp(milliseconds: start + count + 1, counter: 0),
            since: .zero, through: History.Token(sequences: [origin: count]), tables: tables,
            ranges: count == 0
                ? []
                : [
                    BundleHeader.OriginRange(
                        publicKey: key.publicKey, first: 1, last: count, previous: Chain.genesis(origin))
                ], lineage: lineage, schemaRuns: schemaRuns)
        var encoder = try BundleEncoder(
            sink: BufferSink(), signingKey: key.privateKey, header: header, compressionLevel: compressionLevel)
        for (i, changes) in transactions.enumerated() {
            try encoder.beginTransaction(
                origin: origin, sequence: Int64(i + 1),
                timestamp: HLCTimestamp(milliseconds: start + Int64(i), counter: 0), author: author,
                contextName: nil, processID: nil, changeCount: changes.count)
            for change in changes { try encoder.add(change) }
        }
        let sink = try encoder.finish { _, sequence, head in
            try Attestation.sign(origin: key.privateKey, sequence: sequence, head: head)
        }
        return sink.bytes
    }

    /// A snapshot from `key`'s replica (named `senderName`) holding `states` in the order given,
    /// as of its transaction #`through`.
    public static func snapshot(
        key: KeyFile, senderName: String, tables: [BundleHeader.TableSchema], states: [RowState], through: Int64 = 1
    ) throws -> [UInt8] {
        let origin = Replica.ID(publicKey: key.publicKey)
        let header = BundleHeader(
            kind: .snapshot, senderName: senderName, created: HLCTimestamp(milliseconds: 1_700_000_100_000, counter: 0),
            since: .zero, through: History.Token(sequences: [origin: through]), tables: tables, ranges: [])
        var encoder = try BundleEncoder(sink: BufferSink(), signingKey: key.privateKey, header: header)
        for state in states { try encoder.add(state) }
        return try encoder.finish { _, _, _ in fatalError("a snapshot attests no range") }.bytes
    }
}
