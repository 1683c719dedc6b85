import Tidemark

/// Seeded, structure-aware damage to valid bundles (Protocol/bundle.md §3), for fuzz tests that
/// check every damaged file is refused: bit flips and truncations, splices of two bundles at any
/// byte or frame boundary, frames duplicated, dropped or swapped, frame and inflated length fields
/// set to edge and huge values, huge or non-minimal varints written into the header and the record
/// bytes, and empty frames inserted or made.
///
/// The same generator state always yields the same mutant, so a failing run replays from its seed.
public struct BundleMutator: Sendable {
    /// A family of mutations.
    public enum Kind: String, Sendable, CaseIterable, Comparable {
        case bitFlips
        case truncation
        case byteSplice
        case frameSplice
        case duplicatedFrame
        case droppedFrame
        case swappedFrames
        case frameLengthField
        case inflatedLengthField
        case hugeVarint
        case emptyFrame

        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// One damaged file and how it was made.
    public struct Mutant: Sendable {
        /// The family of the mutation.
        public var kind: Kind
        /// What was done, to which seed, where: enough to rebuild it by hand.
        public var description: String
        /// The file.
        public var bytes: [UInt8]
    }

    /// A valid bundle to start from, with the places its bytes can be edited without inflating.
    public struct Seed: Sendable {
        /// A label for reports.
        public var name: String
        /// The bundle.
        public var bundle: BundleBytes
        /// File ranges holding record bytes as the decoder reads them: the payloads of
        /// uncompressed TRANSACTIONS frames and the stored blocks of level-0 compressed ones.
        public var plainRecordRanges: [Range<Int>]

        /// Parses `bytes`; fails if they are not a well-framed bundle.
        public init(name: String, bytes: [UInt8]) throws {
            self.name = name
            bundle = try BundleBytes(bytes)
            let transactions = bundle.frames(ofType: BundleBytes.transactionsType)
            let uncompressed = transactions.filter {
                $0.flags & BundleFormat.compressedFlag == 0 && !$0.payload.isEmpty
            }
            // Stored blocks are found only in a bundle whose transactions frames are all level-0 DEFLATE.
            plainRecordRanges =
                uncompressed.isEmpty ? (try? bundle.storedRecordRanges()) ?? [] : uncompressed.map(\.payload)
        }
    }

    /// The bundles mutations start from (splices take two).
    public let seeds: [Seed]

    /// A mutator over `seeds`; needs at least one.
    public init(seeds: [Seed]) {
        precondition(!seeds.isEmpty, "a mutator needs a seed bundle")
        self.seeds = seeds
    }

    /// Varint encodings a reader must refuse or bound before it allocates: values around 2^63 and
    /// 2^64, one with an 11th byte, and a non-minimal zero (§2.2).
    public static let hugeVarints: [(label: String, bytes: [UInt8])] = [
        ("2^63-1", Array(repeating: 0xFF, count: 8) + [0x7F]),
        ("2^63", Array(repeating: 0x80, count: 9) + [0x01]),
        ("2^64-1", Array(repeating: 0xFF, count: 9) + [0x01]),
        ("2^64 (overflow)", Array(repeating: 0x80, count: 9) + [0x02]),
        ("11 bytes", Array(repeating: 0xFF, count: 10) + [0x01]),
        ("2^62", Array(repeating: 0x80, count: 8) + [0x40]),
        ("2^32", [0x80, 0x80, 0x80, 0x80, 0x10]),
        ("non-minimal 0", [0x80, 0x00]),
    ]

    /// The next mutant of a random kind.
    public func mutant(using rng: inout some RandomNumberGenerator) -> Mutant {
        mutant(Kind.allCases.randomElement(using: &rng)!, using: &rng)
    }

    /// The next mutant of `kind`.
    public func mutant(_ kind: Kind, using rng: inout some RandomNumberGenerator) -> Mutant {
        let seed = seeds.randomElement(using: &rng)!
        let bundle = seed.bundle
        let bytes = bundle.bytes
        let frames = bundle.frames
        var out = bytes
        let what: String
        switch kind {
        case .bitFlips:
            let count = Int.random(in: 1...4, using: &rng)
            var spots: [String] = []
            for _ in 0..<count {
                let offset = Int.random(in: 0..<out.count, using: &rng)
                let bit = Int.random(in: 0..<8, using: &rng)
                out[offset] ^= UInt8(1 << bit)
                spots.append("\(offset).\(bit)")
            }
            what = "flipped bits \(spots.joined(separator: ", "))"
        case .truncation:
            let length = Int.random(in: 0..<bytes.count, using: &rng)
            out = Array(bytes.prefix(length))
            what = "cut to \(length) of \(bytes.count) bytes"
        case .byteSplice:
            let other = seeds.randomElement(using: &rng)!
            let cut = Int.random(in: 0...bytes.count, using: &rng)
            let from = Int.random(in: 0...other.bundle.bytes.count, using: &rng)
            out = Array(bytes[..<cut] + other.bundle.bytes[from...])
            what = "bytes ..<\(cut) + \(other.name) bytes \(from)..."
        case .frameSplice:
            let other = seeds.randomElement(using: &rng)!
            let keep = Int.random(in: 0...frames.count, using: &rng)
            let from = Int.random(in: 0..<other.bundle.frames.count, using: &rng)
            let cut = keep == frames.count ? bytes.count : frames[keep].start
            out = Array(bytes[..<cut] + other.bundle.bytes[other.bundle.frames[from].start...])
            what = "frames ..<\(keep) + \(other.name) frames \(from)..."
        case .duplicatedFrame:
            let index = Int.random(in: 0..<frames.count, using: &rng)
            let at = Int.random(in: 0...frames.count, using: &rng)
            out.insert(contentsOf: Self.frameBytes(frames[index], in: bytes), at: Self.boundary(at, of: bundle))
            what = "frame \(index) (type \(frames[index].type)) copied to boundary \(at)"
        case .droppedFrame:
            let index = Int.random(in: 0..<frames.count, using: &rng)
            out.removeSubrange(Self.frameRange(frames[index]))
            what = "frame \(index) (type \(frames[index].type)) dropped"
        case .swappedFrames:
            var order = Array(frames.indices)
            let i = Int.random(in: 0..<frames.count, using: &rng)
            var j = Int.random(in: 0..<frames.count - 1, using: &rng)
            if j >= i { j += 1 }
            order.swapAt(i, j)
            out =
                Array(bytes[..<BundleFormat.preambleLength]) + order.flatMap { Self.frameBytes(frames[$0], in: bytes) }
            what = "frames \(i) and \(j) swapped"
        case .frameLengthField:
            let index = Int.random(in: 0..<frames.count, using: &rng)
            let frame = frames[index]
            let declared = frame.payload.count
            let toEnd = bytes.count - frame.payload.lowerBound
            let candidates: [UInt32] = [
                0, UInt32(max(declared - 1, 0)), UInt32(declared + 1), UInt32(toEnd + 1),
                UInt32(BundleFormat.maxFrameLength),
                UInt32(BundleFormat.maxFrameLength + 1), 0x8000_0000, 0xFFFF_FFFF,
                UInt32.random(in: 0...UInt32.max, using: &rng),
            ]
            let length = candidates.randomElement(using: &rng)!
            out.replaceSubrange(frame.lengthField, with: Self.bigEndian(length))
            what = "frame \(index) length \(declared) -> \(length)"
        case .inflatedLengthField:
            let compressed = frames.indices.filter {
                frames[$0].flags & BundleFormat.compressedFlag != 0 && frames[$0].payload.count >= 4
            }
            if let index = compressed.randomElement(using: &rng) {
                let field = frames[index].payload.lowerBound..<frames[index].payload.lowerBound + 4
                let declared =
                    Int(bytes[field.lowerBound]) << 24 | Int(bytes[field.lowerBound + 1]) << 16
                    | Int(bytes[field.lowerBound + 2]) << 8 | Int(bytes[field.lowerBound + 3])
                let candidates: [UInt32] = [
                    0, 1, UInt32(max(declared - 1, 0)), UInt32(declared + 1), UInt32(BundleFormat.maxFrameLength),
                    UInt32(BundleFormat.maxFrameLength + 1), 0xFFFF_FFFF,
                ]
                let length = candidates.randomElement(using: &rng)!
                out.replaceSubrange(field, with: Self.bigEndian(length))
                what = "frame \(index) inflated length \(declared) -> \(length)"
            } else {
                // No compressed frame: mark an uncompressed one compressed, so its payload is read as DEFLATE.
                let index = Int.random(in: 0..<frames.count, using: &rng)
                out[frames[index].start + 1] |= BundleFormat.compressedFlag
                what = "frame \(index) marked compressed"
            }
        case .hugeVarint:
            let (label, varint) = Self.hugeVarints.randomElement(using: &rng)!
            let inRecords = !seed.plainRecordRanges.isEmpty && Bool.random(using: &rng)
            let range = inRecords ? seed.plainRecordRanges.randomElement(using: &rng)! : bundle.headerPayload
            // Half the time right after a TEXT or BLOB tag (3, 4), where a length follows.
            let afterTags = range.dropLast().filter { bytes[$0] == 3 || bytes[$0] == 4 }.map { $0 + 1 }
            let offset =
                Bool.random(using: &rng)
                ? afterTags.randomElement(using: &rng) ?? range.randomElement(using: &rng)!
                : range.randomElement(using: &rng)!
            // Uncompressed payloads can grow (their frame length is fixed up so framing stays
            // intact); stored DEFLATE blocks and the header are overwritten in place.
            let frame = bundle.frame(containing: offset)!
            if frame.flags & BundleFormat.compressedFlag == 0 && Bool.random(using: &rng) {
                out.insert(contentsOf: varint, at: offset)
                out.replaceSubrange(frame.lengthField, with: Self.bigEndian(UInt32(frame.payload.count + varint.count)))
                what = "varint \(label) inserted at \(offset) (\(inRecords ? "records" : "header")), frame length fixed"
            } else {
                let end = min(offset + varint.count, range.upperBound)
                out.replaceSubrange(offset..<end, with: varint[..<(end - offset)])
                what = "varint \(label) written over \(offset)..<\(end) (\(inRecords ? "records" : "header"))"
            }
        case .emptyFrame:
            let choices: [(String, [UInt8])] = [
                ("empty TRANSACTIONS", [BundleBytes.transactionsType, 0, 0, 0, 0, 0]),
                ("empty compressed TRANSACTIONS", [BundleBytes.transactionsType, 1, 0, 0, 0, 0]),
                (
                    "compressed TRANSACTIONS declaring 0 bytes",
                    [BundleBytes.transactionsType, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0x03, 0x00]
                ),
                ("empty HEADER", [BundleBytes.headerType, 0, 0, 0, 0, 0]),
                ("empty ATTESTATION", [BundleBytes.attestationType, 0, 0, 0, 0, 0]),
                ("empty SIGNATURE", [BundleBytes.signatureType, 0, 0, 0, 0, 0]),
            ]
            if Bool.random(using: &rng) {
                let (label, frame) = choices.randomElement(using: &rng)!
                let at = Int.random(in: 0...frames.count, using: &rng)
                out.insert(contentsOf: frame, at: Self.boundary(at, of: bundle))
                what = "\(label) frame inserted at boundary \(at)"
            } else {
                let index = Int.random(in: 0..<frames.count, using: &rng)
                out.replaceSubrange(frames[index].payload, with: [])
                out.replaceSubrange(frames[index].lengthField, with: [0, 0, 0, 0])
                what = "frame \(index) (type \(frames[index].type)) emptied"
            }
        }
        return Mutant(kind: kind, description: "\(seed.name): \(what)", bytes: out)
    }

    // MARK: - Frame arithmetic

    private static func frameRange(_ frame: BundleBytes.Frame) -> Range<Int> { frame.start..<frame.payload.upperBound }

    private static func frameBytes(_ frame: BundleBytes.Frame, in bytes: [UInt8]) -> [UInt8] {
        Array(bytes[frameRange(frame)])
    }

    /// The file offset before frame `index`, or the end of the file for `index == frames.count`.
    private static func boundary(_ index: Int, of bundle: BundleBytes) -> Int {
        index == bundle.frames.count ? bundle.bytes.count : bundle.frames[index].start
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
