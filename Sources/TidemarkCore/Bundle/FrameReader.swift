import Crypto

/// Reads the preamble and frames of a bundle (§3), hashing every byte before the signature frame.
///
/// The source is an existential: it is called once per frame, and keeping the reader (and the
/// decoder above it) non-generic lets their per-byte code be compiled concretely in this module
/// instead of through unspecialized generics in the modules that use them.
struct FrameReader {
    struct Frame {
        var type: BundleFormat.FrameType
        /// The payload, decompressed if it was compressed.
        var payload: [UInt8]
        /// The file offset of the frame's first byte.
        var offset: Int
        /// The file offset of the payload's first byte, when the payload is stored uncompressed
        /// (offsets inside a compressed payload have no place in the file).
        var payloadOffset: Int?
    }

    private var source: any ByteSource
    private(set) var offset = 0
    private(set) var fileHash = SHA256()

    init(_ source: any ByteSource) { self.source = source }

    mutating func readExactly(_ count: Int) throws -> [UInt8] {
        let bytes = try source.read(count)
        guard bytes.count == count else { throw BundleError.framing(.truncated, offset: offset + bytes.count) }
        offset += count
        return bytes
    }

    /// Reads and checks the preamble; returns the sender's public key.
    mutating func readPreamble() throws -> [UInt8] {
        let first = try source.read(BundleFormat.preambleLength)
        guard first.count >= 8, Array(first.prefix(8)) == BundleFormat.magic else {
            throw BundleError.framing(.notABundle, offset: 0)
        }
        guard first.count >= 10 else { throw BundleError.framing(.truncated, offset: first.count) }
        let version = UInt16(first[8]) << 8 | UInt16(first[9])
        guard version == BundleFormat.version else {
            throw BundleError.framing(.unsupportedVersion(version), offset: 8)
        }
        guard first.count == BundleFormat.preambleLength else {
            throw BundleError.framing(.truncated, offset: first.count)
        }
        guard first[10] == 0, first[11] == 0 else { throw BundleError.framing(.reservedFlags, offset: 10) }
        offset = first.count
        fileHash.update(data: first)
        return Array(first[12..<44])
    }

    /// Reads the next frame. The signature frame is not hashed.
    mutating func next() throws -> Frame {
        let start = offset
        let head = try readExactly(6)
        guard let type = BundleFormat.FrameType(rawValue: head[0]) else {
            throw BundleError.framing(.unknownFrameType(head[0]), offset: start)
        }
        let flags = head[1]
        guard flags & ~BundleFormat.compressedFlag == 0 else {
            throw BundleError.framing(.reservedFlags, offset: start + 1)
        }
        let length = Int(head[2]) << 24 | Int(head[3]) << 16 | Int(head[4]) << 8 | Int(head[5])
        guard length <= BundleFormat.maxFrameLength else {
            throw BundleError.framing(.frameTooLong(length), offset: start + 2)
        }
        let raw = try readExactly(length)
        if type != .signature {
            fileHash.update(data: head)
            fileHash.update(data: raw)
        }
        guard flags & BundleFormat.compressedFlag != 0 else {
            return Frame(type: type, payload: raw, offset: start, payloadOffset: start + 6)
        }
        // A SIGNATURE frame is never compressed (R10); a compressed payload starts with its length (R7).
        guard type != .signature else { throw BundleError.framing(.badSignatureFrame, offset: start) }
        guard raw.count >= 4 else { throw BundleError.framing(.badCompression, offset: start) }
        let expected = Int(raw[0]) << 24 | Int(raw[1]) << 16 | Int(raw[2]) << 8 | Int(raw[3])
        guard expected > 0, expected <= BundleFormat.maxFrameLength,
            let inflated = Deflate.decompress(raw[4...], expectedCount: expected)
        else { throw BundleError.framing(.badCompression, offset: start) }
        return Frame(type: type, payload: inflated, offset: start, payloadOffset: nil)
    }

    /// Whether the source has no bytes left.
    mutating func atEnd() throws -> Bool { try source.read(1).isEmpty }
}
