import Crypto

/// The X25519 keys a replica decrypts with, derived from its Ed25519 key as age's `ssh-ed25519`
/// recipients derive theirs (Protocol/encryption.md §2), so a peer's Ed25519 public key, which
/// every member already trusts, is all it takes to encrypt to it.
public enum EnvelopeKeys {
    /// The X25519 private key of the replica whose Ed25519 key is `signingKey`: the clamped first
    /// half of SHA-512 of the Ed25519 seed, the scalar Ed25519 itself signs with.
    public static func identity(of signingKey: Curve25519.Signing.PrivateKey) -> Curve25519.KeyAgreement.PrivateKey {
        var scalar = Array(SHA512.hash(data: signingKey.rawRepresentation).prefix(32))
        scalar[0] &= 248
        scalar[31] &= 127
        scalar[31] |= 64
        // 32 bytes always make a valid X25519 private key.
        return try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar)
    }

    /// The X25519 public key of the replica whose Ed25519 public key is `publicKey` (32 bytes): the
    /// Montgomery u-coordinate (1 + y) / (1 − y) of the Edwards point. Nil when the bytes are not
    /// 32 long or map to a point no one can encrypt to: y = 1 (the identity, no u), and every
    /// low-order point, with which the shared secret would be zero and known to anyone.
    public static func recipient(ofSigningKey publicKey: [UInt8]) -> Curve25519.KeyAgreement.PublicKey? {
        guard publicKey.count == 32 else { return nil }
        let y = Curve25519Field(bytes: publicKey)
        let denominator = Curve25519Field.one - y
        guard denominator.bytes != [UInt8](repeating: 0, count: 32) else { return nil }
        let u = (Curve25519Field.one + y) * denominator.inverse()
        guard let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: u.bytes),
            let shared = try? probe.sharedSecretFromKeyAgreement(with: key), !Envelope.isZero(shared)
        else { return nil }
        return key
    }

    /// Any key: a clamped scalar times a low-order point gives zero, whatever the scalar.
    private static let probe = Curve25519.KeyAgreement.PrivateKey()

    /// The identity as age writes it (`AGE-SECRET-KEY-1…`), for `age -d -i FILE`. A secret.
    public static func ageIdentity(_ identity: Curve25519.KeyAgreement.PrivateKey) -> String {
        Bech32.encode(hrp: "age-secret-key-", Array(identity.rawRepresentation)).uppercased()
    }

    /// The recipient as age writes it (`age1…`), for `age -r`.
    public static func ageRecipient(_ recipient: Curve25519.KeyAgreement.PublicKey) -> String {
        Bech32.encode(hrp: "age", Array(recipient.rawRepresentation))
    }
}
