import CZlib

/// The bundle's compressor applied to other bytes: raw DEFLATE at level 6 in chunks of 1 MiB of
/// input, as `BundleEncoder` compresses record chunks (Protocol/bundle.md §3).
enum ChunkedDeflate {
    static let chunkSize = 1 << 20

    /// The total compressed size of `bytes`.
    static func compressedSize(of bytes: [UInt8]) -> Int {
        stride(from: 0, to: bytes.count, by: chunkSize).reduce(0) { total, start in
            total + compressedSize(of: bytes[start..<min(start + chunkSize, bytes.count)])
        }
    }

    private static func compressedSize(of chunk: ArraySlice<UInt8>) -> Int {
        var stream = z_stream()
        precondition(tidemark_deflate_init(&stream, 6) == Z_OK, "zlib deflateInit2 failed")
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(chunk.count))))
        return chunk.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                precondition(
                    deflate(&stream, Z_FINISH) == Z_STREAM_END, "zlib deflate did not finish within deflateBound")
                return out.count - Int(stream.avail_out)
            }
        }
    }
}
