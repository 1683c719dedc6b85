import CZlib

/// DEFLATE through the system zlib: raw (RFC 1951) for valid frames, and the zlib wrapper (RFC 1950)
/// for the vector that uses the wrong container.
enum Zlib {
    /// Compresses `input` at level 6 with `windowBits` -15 (raw DEFLATE) or 15 (zlib wrapper).
    static func deflate(_ input: [UInt8], windowBits: Int32 = -15, level: Int32 = 6) -> [UInt8] {
        var stream = z_stream()
        let status = deflateInit2_(
            &stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
            Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2 failed")
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 16)
        let produced: Int = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                precondition(CZlib.deflate(&stream, Z_FINISH) == Z_STREAM_END, "deflate did not finish")
                return outBuf.count - Int(stream.avail_out)
            }
        }
        return Array(output.prefix(produced))
    }

    /// Inflates raw DEFLATE; nil if the stream is not complete. Used by the dump tool only.
    static func inflate(_ input: [UInt8], limit: Int) -> [UInt8]? {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: limit)
        let result: (Int32, Int) = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                let status = CZlib.inflate(&stream, Z_FINISH)
                return (status, outBuf.count - Int(stream.avail_out))
            }
        }
        guard result.0 == Z_STREAM_END else { return nil }
        return Array(output.prefix(result.1))
    }
}
