/// Where an encoding's bytes go: a byte array, or a hash that absorbs them as they come
/// (`RowDigest.Hasher`), so the one encoding serves both without building bytes to hash.
public protocol EncodingOutput {
    /// Appends one byte.
    mutating func put(_ byte: UInt8)
    /// Appends `bytes`, in order.
    mutating func put(_ bytes: UnsafeRawBufferPointer)
    /// Appends the 8 bytes of `word`, most significant first.
    mutating func putBigEndian(_ word: UInt64)
}

extension EncodingOutput {
    /// Appends `bytes`, in order.
    @inlinable
    public mutating func put(_ bytes: [UInt8]) { bytes.withUnsafeBytes { put($0) } }
}

extension Array: EncodingOutput where Element == UInt8 {
    @inlinable
    public mutating func put(_ byte: UInt8) { append(byte) }

    @inlinable
    public mutating func put(_ bytes: UnsafeRawBufferPointer) { append(contentsOf: bytes) }

    @inlinable
    public mutating func putBigEndian(_ word: UInt64) {
        Swift.withUnsafeBytes(of: word.bigEndian) { append(contentsOf: $0) }
    }
}
