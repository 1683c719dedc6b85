/// The Ed25519 public keys a reader accepts in a bundle (Protocol/bundle.md §5.1, §9): the canonical
/// encoding (RFC 8032 §5.1.2) of a point that is not of small order. Verification itself is
/// cofactorless, as swift-crypto's (BoringSSL's) is; under a small-order key anyone can make a
/// signature that verifies, and a non-canonical encoding names the same point as another key.
public enum SigningKeyCheck {
    /// Whether `key` is 32 bytes encoding y below p = 2^255 − 19 of a point of large order.
    ///
    /// The eight points whose order divides 8 have five y coordinates between them (a point and its
    /// negation share y): 1 (the identity), p − 1 (order 2), 0 (order 4) and a pair y₈, p − y₈
    /// (order 8). Refusing those five whatever the sign bit also refuses the non-canonical
    /// encodings with x = 0 (y = 1 or p − 1, sign bit set). A comparison, where converting the key
    /// to its X25519 counterpart costs a field inversion and a scalar multiplication: every
    /// bundle and watermark a pull reads is checked.
    public static func isAcceptable(_ key: [UInt8]) -> Bool {
        guard key.count == 32 else { return false }
        // y ≥ p: the 255-bit little-endian y is p … 2^255 − 1, i.e. ed…7f to ff…7f.
        if key[31] & 0x7f == 0x7f && key[1...30].allSatisfy({ $0 == 0xff }) && key[0] >= 0xed { return false }
        return !smallOrderY.contains { y in
            y[31] == key[31] & 0x7f && y.indices.dropLast().allSatisfy { y[$0] == key[$0] }
        }
    }

    /// The y coordinates of the points of small order, little-endian, the sign bit clear.
    private static let smallOrderY: [[UInt8]] = [
        [0x01] + [UInt8](repeating: 0, count: 31),  // identity
        [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f],  // order 2
        [UInt8](repeating: 0, count: 32),  // order 4
        [
            0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
            0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05,
        ],  // order 8: y₈
        [
            0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
            0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a,
        ],  // order 8: p − y₈
    ]
}
