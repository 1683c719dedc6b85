/// Why an encrypted file (Protocol/encryption.md) could not be opened. No case quotes key material.
public enum EnvelopeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The header is not age-encryption.org/v1 as §3 describes it.
    case badHeader(String)
    /// No recipient stanza opens with this replica's key: the file was encrypted for others.
    case notARecipient(stanzas: Int)
    /// The header's MAC does not match: the header was altered.
    case headerAltered
    /// The payload ends before its last chunk (or inside the nonce).
    case truncated(chunk: Int)
    /// An X25519 share or recipient key is a low-order point: the shared secret would be zero,
    /// known to anyone, so the age specification refuses it.
    case lowOrderKey
    /// A payload chunk fails authentication: altered, cut inside, reordered, or from another file.
    case damaged(chunk: Int)

    public var description: String {
        switch self {
        case .badHeader(let why): "not a valid age header: \(why)"
        case .notARecipient(let count):
            "encrypted for someone else: none of its \(count) recipient\(count == 1 ? "" : "s") is this replica"
        case .headerAltered: "its age header was altered (the header MAC does not match)"
        case .truncated(let chunk): "its encrypted payload is truncated (ends at chunk \(chunk))"
        case .lowOrderKey: "a recipient stanza uses a low-order X25519 key, with which anyone could open the file"
        case .damaged(let chunk):
            "its encrypted payload fails authentication at chunk \(chunk): altered, cut short or reordered"
        }
    }
}
