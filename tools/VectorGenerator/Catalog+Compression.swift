/// §3.2 compressed payloads. Every vector here is re-signed: only the compression is wrong.
extension Catalog {
    /// Long by design: the catalogue of compression vectors, one entry each, in the order of the spec.
    mutating func addCompression() {
        let base = alice(1...2, compressed: true)
        let raw = base.transactions.flatMap(\.encoded)
        let deflated = Zlib.deflate(raw)

        func withRecordsBody(_ body: [UInt8], flags: UInt8 = 1) -> Draft {
            var d = base
            d.editFrames = { frames in
                let i = frames.firstIndex { $0.type == Frame.transactions }!
                frames[i] = Frame(type: Frame.transactions, flags: flags, body: body)
            }
            return d
        }

        let bomb = Zlib.deflate([UInt8](repeating: 0, count: 4 * 1024 * 1024))
        invalid(
            "decompression-bomb",
            "The TRANSACTIONS payload declares 200 bytes but inflates to 4 MiB of zeros; a reader must stop at "
                + "the declared length", flags: ["Compression", "Resigned", "Limits"], error: "bad-compression",
            withRecordsBody(Wire.be32(200) + bomb))
        invalid(
            "declared-length-too-large", "The declared raw length is one more than the DEFLATE stream yields",
            flags: ["Compression", "Resigned"], error: "bad-compression",
            withRecordsBody(Wire.be32(UInt32(raw.count + 1)) + deflated))
        invalid(
            "declared-length-too-small", "The declared raw length is one less than the DEFLATE stream yields",
            flags: ["Compression", "Resigned"], error: "bad-compression",
            withRecordsBody(Wire.be32(UInt32(raw.count - 1)) + deflated))
        invalid(
            "declared-length-zero", "A compressed TRANSACTIONS frame declaring 0 raw bytes (an empty DEFLATE stream)",
            flags: ["Compression", "Resigned"], error: "bad-compression",
            withRecordsBody(Wire.be32(0) + Zlib.deflate([])))
        invalid(
            "declared-length-over-limit", "The declared raw length is 16 MiB + 1",
            flags: ["Compression", "Resigned", "Limits"],
            error: "bad-compression", withRecordsBody(Wire.be32(16 * 1024 * 1024 + 1) + deflated))
        invalid(
            "bytes-after-deflate-stream", "One byte follows the end of the DEFLATE stream inside the payload",
            flags: ["Compression", "Resigned"], error: "bad-compression",
            withRecordsBody(Wire.be32(UInt32(raw.count)) + deflated + [0]))
        invalid(
            "deflate-stream-cut", "The DEFLATE stream lacks its last two bytes", flags: ["Compression", "Resigned"],
            error: "bad-compression",
            withRecordsBody(Wire.be32(UInt32(raw.count)) + deflated.dropLast(2)))
        invalid(
            "zlib-wrapper", "The payload is zlib (RFC 1950) rather than raw DEFLATE (RFC 1951)",
            flags: ["Compression", "Resigned"],
            error: "bad-compression", withRecordsBody(Wire.be32(UInt32(raw.count)) + Zlib.deflate(raw, windowBits: 15)))
        invalid(
            "compressed-payload-too-short", "A compressed payload of 3 bytes, too short for its raw length",
            flags: ["Compression", "Resigned"], error: "bad-compression", withRecordsBody([0, 0, 1]))

        var d = base
        d.cuts = [raw.count / 2]
        d.editFrames = { frames in frames.insert(Frame(type: Frame.transactions, flags: 0, body: []), at: 2) }
        invalid(
            "empty-transactions-frame",
            "An uncompressed TRANSACTIONS frame with an empty payload between two others, inside a record",
            flags: ["Framing", "Resigned"], error: "empty-frame", d)
        d.cuts = [base.transactions[0].encoded.count]
        invalid(
            "empty-transactions-frame-between-records",
            "An uncompressed TRANSACTIONS frame with an empty payload between two others, "
                + "where one transaction record ends and the next begins", flags: ["Framing", "Resigned"],
            error: "empty-frame", d)
        d = base
        d.editFrames = { frames in frames.insert(Frame(type: Frame.transactions, flags: 0, body: []), at: 2) }
        invalid(
            "empty-transactions-frame-last",
            "An uncompressed TRANSACTIONS frame with an empty payload after the last record",
            flags: ["Framing", "Resigned"], error: "empty-frame", d)
    }
}
