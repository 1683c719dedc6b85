import Crypto

/// The end of a bundle (§5.2, §5.1): the attestations, the signature, and the verified result.
extension BundleDecoder {
    /// Reads the attestations and the signature after the last transaction and verifies everything.
    public func finish() throws -> VerifiedBundle {
        precondition(open == nil, "read every change before finishing")
        while pending == nil {
            // Bytes left over start a record that never ends (R28).
            guard position == chunk.count else { throw fail(.truncated) }
            _ = try refill()
            if pending == nil && position < chunk.count {
                throw fail(.unexpectedRecord("records follow where the reader stopped reading them"))
            }
        }
        // Every frame's place is checked through the SIGNATURE frame before any attestation (R9, then R10).
        var frame = pending!
        var attestationFrames: [FrameReader.Frame] = []
        while frame.type == .attestation && attestationFrames.count < header.ranges.count {
            attestationFrames.append(frame)
            frame = try frames.next()
        }
        guard frame.type == .signature, attestationFrames.count == header.ranges.count else {
            throw BundleError.framing(.unexpectedFrame(frame.type.rawValue), offset: frame.offset)
        }
        guard frame.payload.count == 64 else { throw BundleError.framing(.badSignatureFrame, offset: frame.offset) }
        var attestations: [Attestation] = []
        for (range, attestationFrame) in zip(header.ranges, attestationFrames) {
            let attestation = try Attestation.decode(attestationFrame.payload, frameOffset: attestationFrame.offset)
            let chain = chains[range.origin]!
            guard attestation.origin == range.origin, attestation.sequence == range.last else {
                throw BundleError.verification(.badAttestation(origin: range.origin.description))
            }
            guard chain.done == range.last else {
                throw BundleError.verification(.rangeIncomplete(origin: range.origin.description))
            }
            guard attestation.head == chain.head else {
                throw BundleError.verification(.chainMismatch(origin: range.origin.description))
            }
            guard SigningKeyCheck.isAcceptable(range.publicKey), attestation.verifies(publicKey: range.publicKey) else {
                throw BundleError.verification(.badAttestation(origin: range.origin.description))
            }
            attestations.append(attestation)
        }
        let digest = Array(frames.fileHash.finalize())
        guard try frames.atEnd() else { throw BundleError.framing(.trailingBytes, offset: frames.offset) }
        guard SigningKeyCheck.isAcceptable(senderKey),
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: senderKey),
            key.isValidSignature(frame.payload, for: BundleFormat.bundleSignaturePrefix + digest)
        else { throw BundleError.verification(.badSignature) }
        return VerifiedBundle(
            header: header, senderKey: senderKey, attestations: attestations, digest: digest,
            transactionCount: transactionCount, changeCount: changeCount)
    }
}

/// A bundle whose framing, records, chains, attestations and signature all verified.
public struct VerifiedBundle: Sendable, Hashable {
    /// The header.
    public let header: BundleHeader
    /// The sender's public key.
    public let senderKey: [UInt8]
    /// One attestation per origin range, in header order.
    public let attestations: [Attestation]
    /// SHA-256 of the signed bytes: identifies the bundle's content.
    public let digest: [UInt8]
    /// How many transactions it holds.
    public let transactionCount: Int
    /// How many changes it holds.
    public let changeCount: Int
    /// The sender's identity.
    public var sender: Replica.ID { Replica.ID(publicKey: senderKey) }
}
