/// The Ed25519 public keys a reader accepts in a bundle (Protocol/bundle.md §5.1, §9): the canonical
/// encoding (RFC 8032 §5.1.2) of a point that is not of small order. Verification itself is
/// cofactorless, as swift-crypto's (BoringSSL's) is; under a small-order key anyone can make a
/// signature that verifies, and a non-canonical encoding names the same point as another key.
public enum SigningKeyCheck {
    /// Whether `key` is 32 bytes encoding y below p = 2^255 − 19, without the sign bit set where x
    /// is 0 (y = 1 or y = p − 1), of a point of large order.
    public static func isAcceptable(_ key: [UInt8]) -> Bool {
        guard key.count == 32 else { return false }
        // y ≥ p: the 255-bit little-endian y is p … 2^255 − 1, i.e. ed…7f to ff…7f.
        if key[31] & 0x7f == 0x7f && key[1...30].allSatisfy({ $0 == 0xff }) && key[0] >= 0xed { return false }
        // x = 0 (y = 1 or y = p − 1) has one encoding, with the sign bit clear.
        if key[31] & 0x80 != 0 {
            let y = key[0..<31] + [key[31] & 0x7f]
            if Array(y) == [1] + [UInt8](repeating: 0, count: 31) { return false }
            if Array(y) == [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f] { return false }
        }
        // Small order: the point has no X25519 counterpart anyone could use (EnvelopeKeys).
        return EnvelopeKeys.recipient(ofSigningKey: key) != nil
    }
}
