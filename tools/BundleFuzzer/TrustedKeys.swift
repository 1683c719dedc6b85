import TidemarkCore

/// The keys the fuzzed "store" trusts: the public keys of alice, bob and carol from
/// `Protocol/vectors/keys/keys.json` (mallory is left out, as in the vectors). Seeds signed by them
/// take the import path; everything still reaches `finish()`.
enum TrustedKeys {
    static let publicKeys: Set<[UInt8]> = [
        hex("762a763855f4cdfba05e10e0727571b177986d2ddb691355305bd8f4495a6208"),  // alice
        hex("60240fae2f8755e2c361a7d18c41b5dc6fddfe77437fe97b6f543026b4b6f2db"),  // bob
        hex("1dab2c696f2a16ea025f98405c99711d559630cfc9cb30939d3507fcf04fe6df"),  // carol
    ]

    /// Whether an import would go on past its trust check (exchange.md §4.1): the sender and every
    /// origin with a range are trusted.
    static func admit(_ decoder: BundleDecoder) -> Bool {
        publicKeys.contains(decoder.senderKey) && decoder.header.ranges.allSatisfy { publicKeys.contains($0.publicKey) }
    }

    private static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }
}
