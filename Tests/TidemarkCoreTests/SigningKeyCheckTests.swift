import Crypto
import Foundation
import Testing
import TidemarkCore

/// Protocol/bundle.md §5.1 and §9: readers refuse small-order and non-canonical Ed25519 keys, under
/// which a cofactorless verifier that takes any key accepts forged signatures.
@Suite struct SigningKeyCheckTests {
    static func hex(_ string: String) -> [UInt8] {
        stride(from: 0, to: string.count, by: 2).map { i in
            let start = string.index(string.startIndex, offsetBy: i)
            return UInt8(string[start..<string.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    /// The eight points of small order, canonically encoded, and non-canonical encodings of some.
    static let smallOrder = [
        "0100000000000000000000000000000000000000000000000000000000000000",  // identity
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // order 2
        "0000000000000000000000000000000000000000000000000000000000000000",  // order 4
        "0000000000000000000000000000000000000000000000000000000000000080",  // order 4
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",  // order 8
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",  // order 8
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  // order 8
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",  // order 8
    ]
    static let nonCanonical = [
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // y = p
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // y = p + 1
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // y = 2^255 - 1
        "0100000000000000000000000000000000000000000000000000000000000080",  // x = 0, sign bit set
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",  // x = 0, sign bit set
    ]

    @Test func smallOrderAndNonCanonicalKeysAreRefusedAndRealKeysAccepted() {
        for key in Self.smallOrder + Self.nonCanonical {
            #expect(!SigningKeyCheck.isAcceptable(Self.hex(key)), "\(key)")
        }
        #expect(!SigningKeyCheck.isAcceptable([UInt8](repeating: 1, count: 31)))
        for _ in 0..<64 {
            let key = Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
            #expect(SigningKeyCheck.isAcceptable(key), "\(key)")
        }
    }

    /// The check compares y with the five y coordinates of the small-order points. It refuses
    /// exactly the keys whose X25519 counterpart (the birational map to Montgomery form) is missing
    /// or of low order, a definition that needs no table: checked on the small-order points, their
    /// neighbours, random bytes and real keys.
    @Test func refusesExactlyTheKeysWithoutAnX25519CounterpartOfLargeOrder() {
        var keys = (Self.smallOrder + Self.nonCanonical).map(Self.hex)
        for key in Self.smallOrder.map(Self.hex) {
            for delta: UInt8 in [1, 255] {
                var near = key
                near[0] = near[0] &+ delta
                keys.append(near)
            }
        }
        var generator = SystemRandomNumberGenerator()
        keys += (0..<512).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        keys += (0..<64).map { _ in Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation) }
        var compared = 0
        for key in keys {
            let y = key[0..<31] + [key[31] & 0x7f]
            let yAtLeastP = y[31] == 0x7f && y[1...30].allSatisfy { $0 == 0xff } && y[0] >= 0xed
            guard !yAtLeastP else {
                #expect(!SigningKeyCheck.isAcceptable(key), "\(key)")
                continue
            }
            compared += 1
            #expect(
                SigningKeyCheck.isAcceptable(key) == (EnvelopeKeys.recipient(ofSigningKey: key) != nil), "\(key)")
        }
        #expect(compared >= 590)
    }

    /// Why the check is needed: under the identity key, R = identity and S = 0 verify for any message
    /// in swift-crypto's own verifier, which takes the key as given.
    @Test func aForgedSignatureVerifiesUnderTheIdentityKeyWithoutTheCheck() throws {
        let forged = [1] + [UInt8](repeating: 0, count: 63)
        let key = try Curve25519.Signing.PublicKey(rawRepresentation: Self.hex(Self.smallOrder[0]))
        for message in ["anything", "a bundle digest", ""] {
            #expect(key.isValidSignature(forged, for: Array(message.utf8)))
        }
    }
}
