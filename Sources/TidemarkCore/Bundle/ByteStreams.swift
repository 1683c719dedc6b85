/// Where an encoder writes bytes (a file, a buffer). The core does no I/O itself.
public protocol ByteSink {
    /// Appends bytes.
    mutating func write(_ bytes: [UInt8]) throws
}

/// Where a decoder reads bytes from.
public protocol ByteSource {
    /// Reads up to `count` bytes; fewer only at the end of the data, none after it.
    mutating func read(_ count: Int) throws -> [UInt8]
}

/// An in-memory sink.
public struct BufferSink: ByteSink {
    /// The bytes written so far.
    public var bytes: [UInt8] = []
    /// Creates an empty sink.
    public init() {}
    public mutating func write(_ bytes: [UInt8]) throws { self.bytes += bytes }
}

/// An in-memory source.
public struct BufferSource: ByteSource {
    let bytes: [UInt8]
    var position = 0
    /// Reads from `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public mutating func read(_ count: Int) throws -> [UInt8] {
        let end = min(bytes.count, position + count)
        defer { position = end }
        return Array(bytes[position..<end])
    }
}
