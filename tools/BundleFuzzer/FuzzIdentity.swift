import Crypto
import TidemarkCore

/// The X25519 key the fuzzed "store" decrypts with: fixed, so encrypted seeds made for its
/// recipient (`tools/fuzz.sh` encrypts every vector with `age -r`) open and reach the decoder.
enum FuzzIdentity {
    /// 32 bytes of 0x42, a valid X25519 private key (X25519 clamps it).
    static let key = try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x42, count: 32))
    /// Its age recipient, which `tools/fuzz.sh` names.
    static var recipient: String { EnvelopeKeys.ageRecipient(key.publicKey) }
}
