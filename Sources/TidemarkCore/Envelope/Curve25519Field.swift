/// Arithmetic modulo 2^255 − 19, just enough to map an Ed25519 public key to its X25519 form
/// (Protocol/encryption.md §2). Only public values pass through it, so it need not run in constant
/// time. Sixteen 16-bit limbs in `Int64`, so products and sums never overflow.
struct Curve25519Field: Equatable {
    var limbs: [Int64]

    static let one = Curve25519Field(limbs: [1] + [Int64](repeating: 0, count: 15))

    /// The little-endian 32 bytes, bit 255 ignored (it is the sign of x in an Ed25519 key).
    init(bytes: [UInt8]) {
        limbs = (0..<16).map { Int64(bytes[2 * $0]) | Int64(bytes[2 * $0 + 1]) << 8 }
        limbs[15] &= 0x7fff
    }

    private init(limbs: [Int64]) { self.limbs = limbs }

    static func + (a: Self, b: Self) -> Self { Self(limbs: (0..<16).map { a.limbs[$0] + b.limbs[$0] }) }
    static func - (a: Self, b: Self) -> Self { Self(limbs: (0..<16).map { a.limbs[$0] - b.limbs[$0] }) }

    static func * (a: Self, b: Self) -> Self {
        var t = [Int64](repeating: 0, count: 31)
        for i in 0..<16 { for j in 0..<16 { t[i + j] += a.limbs[i] * b.limbs[j] } }
        // 2^256 ≡ 38 (mod p).
        for i in 0..<15 { t[i] += 38 * t[i + 16] }
        var out = Self(limbs: Array(t[0..<16]))
        out.carry()
        out.carry()
        return out
    }

    /// The inverse, as `self^(p − 2)`; zero maps to zero.
    func inverse() -> Self {
        var c = self
        for bit in stride(from: 253, through: 0, by: -1) {
            c = c * c
            if bit != 2 && bit != 4 { c = c * self }
        }
        return c
    }

    /// Brings every limb back to 16 bits, folding the top carry into the bottom.
    private mutating func carry() {
        for i in 0..<16 {
            limbs[i] += 1 << 16
            let c = limbs[i] >> 16
            if i < 15 { limbs[i + 1] += c - 1 } else { limbs[0] += 38 * (c - 1) }
            limbs[i] -= c << 16
        }
    }

    /// The canonical little-endian 32 bytes (fully reduced modulo p).
    var bytes: [UInt8] {
        var t = self
        t.carry()
        t.carry()
        t.carry()
        for _ in 0..<2 {
            var m = [Int64](repeating: 0, count: 16)
            m[0] = t.limbs[0] - 0xffed
            for i in 1..<15 {
                m[i] = t.limbs[i] - 0xffff - ((m[i - 1] >> 16) & 1)
                m[i - 1] &= 0xffff
            }
            m[15] = t.limbs[15] - 0x7fff - ((m[14] >> 16) & 1)
            let borrow = (m[15] >> 16) & 1
            m[14] &= 0xffff
            if borrow == 0 { t.limbs = m }
        }
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<16 {
            out[2 * i] = UInt8(t.limbs[i] & 0xff)
            out[2 * i + 1] = UInt8((t.limbs[i] >> 8) & 0xff)
        }
        return out
    }
}
