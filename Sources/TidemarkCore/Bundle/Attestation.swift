import Crypto

/// An origin's signed statement that its chain hash after transaction `sequence` is `head`.
public struct Attestation: Sendable, Hashable {
    /// The origin.
    public var origin: Replica.ID
    /// The last transaction the head covers.
    public var sequence: Int64
    /// The chain hash after it.
    public var head: [UInt8]
    /// The origin's Ed25519 signature of `Chain.attestationMessage`.
    public var signature: [UInt8]

    /// Creates an attestation.
    public init(origin: Replica.ID, sequence: Int64, head: [UInt8], signature: [UInt8]) {
        self.origin = origin
        self.sequence = sequence
        self.head = head
        self.signature = signature
    }

    /// Signs a head with the origin's key.
    public static func sign(origin key: Curve25519.Signing.PrivateKey, sequence: Int64, head: [UInt8]) throws
        -> Attestation
    {
        let origin = Replica.ID(publicKey: Array(key.publicKey.rawRepresentation))
        let signature = try key.signature(for: Chain.attestationMessage(origin: origin, sequence: sequence, head: head))
        return Attestation(origin: origin, sequence: sequence, head: head, signature: Array(signature))
    }

    /// Whether the signature verifies under `publicKey`.
    public func verifies(publicKey: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(
            signature, for: Chain.attestationMessage(origin: origin, sequence: sequence, head: head))
    }

    func encoded() -> [UInt8] {
        var out = origin.bytes
        RecordEncoding.varint(UInt64(sequence), &out)
        return out + head + signature
    }

    /// Any malformation of the payload, its varint included, is R34 `bad-attestation`.
    static func decode(_ payload: [UInt8], frameOffset: Int) throws -> Attestation {
        var r = PayloadReader(payload, base: frameOffset + 6)
        let malformed = BundleError.framing(.malformedAttestation, offset: frameOffset)
        guard let origin = (try? r.take(16)).flatMap(Replica.ID.init(bytes:)), let sequence = try? r.varint(),
            let head = try? r.take(32), let signature = try? r.take(64),
            r.atEnd, sequence >= 1, sequence <= UInt64(Int64.max)
        else { throw malformed }
        return Attestation(origin: origin, sequence: Int64(sequence), head: head, signature: signature)
    }
}
