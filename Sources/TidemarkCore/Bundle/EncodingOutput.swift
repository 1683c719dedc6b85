/// Where an encoding's bytes go: a byte array, or the buffer a row hash is taken of
/// (`EncodingBuffer`, in `RowDigest.Hasher`), so both follow the one encoding.
public protocol EncodingOutput {
    /// Appends one byte.
    mutating func put(_ byte: UInt8)
    /// Appends `bytes`, in order.
    mutating func put(_ bytes: UnsafeRawBufferPointer)
    /// Appends the 8 bytes of `word`, most significant first.
    mutating func putBigEndian(_ word: UInt64)
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
