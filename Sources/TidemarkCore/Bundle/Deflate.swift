import CZlib

/// Raw DEFLATE (RFC 1951, no zlib or gzip wrapper) of one bundle chunk.
enum Deflate {
    /// Compresses `input` at `level` (1 fastest … 9 smallest).
    static func compress(_ input: [UInt8], level: Int32 = 6) -> [UInt8] {
        var stream = z_stream()
        precondition(tidemark_deflate_init(&stream, level) == Z_OK, "zlib deflateInit2 failed")
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let produced: Int = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                let status = deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "zlib deflate did not finish within deflateBound")
                return outBuf.count - Int(stream.avail_out)
            }
        }
        output.removeLast(output.count - produced)
        return output
    }

    /// Decompresses `input`, which must inflate to exactly `expectedCount` bytes and end its
    /// DEFLATE stream at its last byte. Never allocates more than `expectedCount`.
    static func decompress(_ input: ArraySlice<UInt8>, expectedCount: Int) -> [UInt8]? {
        var stream = z_stream()
        guard tidemark_inflate_init(&stream) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: expectedCount + 1)
        let result: (Int32, Int, Int) = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                let status = inflate(&stream, Z_FINISH)
                return (status, outBuf.count - Int(stream.avail_out), Int(stream.avail_in))
            }
        }
        guard result.0 == Z_STREAM_END, result.1 == expectedCount, result.2 == 0 else { return nil }
        output.removeLast()
        return output
    }
}
