/// Bech32 (BIP 173) encoding, the text form of age identities and recipients
/// (`AGE-SECRET-KEY-1…`, `age1…`). Unlike BIP 173, age sets no length limit.
enum Bech32 {
    private static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l")

    /// `hrp` + `1` + the data in 5-bit groups + a 6-character checksum, lower case.
    static func encode(hrp: String, _ data: [UInt8]) -> String {
        let groups = regroup(data)
        let checksum = self.checksum(hrp: hrp, groups)
        return hrp + "1" + String((groups + checksum).map { alphabet[Int($0)] })
    }

    private static func regroup(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in data {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(UInt8((accumulator >> UInt32(bits)) & 31))
            }
        }
        if bits > 0 { out.append(UInt8((accumulator << UInt32(5 - bits)) & 31)) }
        return out
    }

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var chk: UInt32 = 1
        for value in values {
            let top = chk >> 25
            chk = (chk & 0x1ff_ffff) << 5 ^ UInt32(value)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    private static func checksum(hrp: String, _ groups: [UInt8]) -> [UInt8] {
        let h = Array(hrp.utf8)
        let expanded = h.map { $0 >> 5 } + [0] + h.map { $0 & 31 }
        let mod = polymod(expanded + groups + [0, 0, 0, 0, 0, 0]) ^ 1
        return (0..<6).map { UInt8((mod >> UInt32(5 * (5 - $0))) & 31) }
    }
}
