/// §3.1 preamble and §3.2 frames.
extension Catalog {
    /// Long by design: the catalogue of framing vectors, one entry each, in the order of the spec.
    mutating func addFraming() {
        let base = alice(1...2)
        let file = base.build(world: w).file
        let spans = FrameWalk.spans(file)
        let header = spans.first { $0.type == Frame.header }!
        let records = spans.first { $0.type == Frame.transactions }!
        let attestation = spans.first { $0.type == Frame.attestation }!
        let signature = spans.first { $0.type == Frame.signature }!

        // §3.1
        invalid("empty-file", "Zero bytes", flags: ["Framing", "Truncated"], error: "bad-magic", bytes: [])
        var d = base
        d.editPreamble = { $0[0] = 0x88 }
        invalid(
            "bad-magic", "The first magic byte is 0x88 instead of 0x89", flags: ["Framing", "Resigned"],
            error: "bad-magic", d)
        d = base
        d.editPreamble = { $0.remove(at: 4) }
        invalid(
            "text-mode-newline", "A text-mode transfer turned the magic's CR LF into LF",
            flags: ["Framing", "Resigned"],
            error: "bad-magic", d)
        d = base
        d.editPreamble = { $0[9] = 2 }
        invalid(
            "unsupported-version", "Format version 2; this specification defines version 1 only",
            flags: ["Framing", "Resigned", "Version"],
            error: "unsupported-version", d)
        d = base
        d.editPreamble = { $0[9] = 0 }
        invalid(
            "version-zero", "Format version 0", flags: ["Framing", "Resigned", "Version"], error: "unsupported-version",
            d)
        d = base
        d.editPreamble = { $0[11] = 1 }
        invalid(
            "reserved-flags", "Preamble flag bit 0 set", flags: ["Framing", "Resigned"], error: "reserved-flags", d)
        d = base
        d.editPreamble = { $0[10] = 0x80 }
        invalid(
            "reserved-flags-high", "Preamble flag bit 15 set", flags: ["Framing", "Resigned"], error: "reserved-flags",
            d)

        // Truncation: the file is cut; nothing can be re-signed.
        invalid(
            "only-magic", "The file ends after the magic", flags: ["Framing", "Truncated"], error: "truncated",
            bytes: Array(file.prefix(8))
        )
        invalid(
            "truncated-in-preamble", "The file ends inside the sender's public key", flags: ["Framing", "Truncated"],
            error: "truncated",
            bytes: Array(file.prefix(30)))
        invalid(
            "truncated-in-frame-head", "The file ends inside the HEADER frame's length field",
            flags: ["Framing", "Truncated"],
            error: "truncated", bytes: Array(file.prefix(header.start + 4)))
        invalid(
            "truncated-in-header", "The file ends in the middle of the HEADER payload",
            flags: ["Framing", "Truncated"], error: "truncated",
            bytes: Array(file.prefix((header.bodyStart + header.end) / 2)))
        let cuts = [records.bodyStart, records.bodyStart + 17, (records.bodyStart + records.end) / 2, records.end - 1]
        for (i, cut) in cuts.enumerated() {
            invalid(
                "truncated-in-records-\(i + 1)",
                "The file ends \(cut - records.bodyStart) bytes into a TRANSACTIONS payload of "
                    + "\(records.end - records.bodyStart)", flags: ["Framing", "Truncated"], error: "truncated",
                bytes: Array(file.prefix(cut)))
        }
        invalid(
            "truncated-between-frames", "The file ends after the TRANSACTIONS frame, before the attestation",
            flags: ["Framing", "Truncated"],
            error: "truncated", bytes: Array(file.prefix(records.end)))
        invalid(
            "truncated-in-attestation", "The file ends inside the ATTESTATION payload",
            flags: ["Framing", "Truncated"], error: "truncated",
            bytes: Array(file.prefix(attestation.end - 10)))
        invalid(
            "missing-signature", "The file ends where the SIGNATURE frame should start",
            flags: ["Framing", "Truncated"],
            error: "truncated",
            bytes: Array(file.prefix(signature.start)))
        invalid(
            "truncated-in-signature", "The last byte of the signature is missing", flags: ["Framing", "Truncated"],
            error: "truncated",
            bytes: Array(file.dropLast()))

        // §3.2 frame heads.
        d = base
        d.editFrames = { $0.insert(Frame(type: 0x04, flags: 0, body: Array("?".utf8)), at: $0.count - 1) }
        invalid(
            "unknown-frame-type", "A frame of type 0x04 before the attestation", flags: ["Framing", "Resigned"],
            error: "unknown-frame-type", d)
        d = base
        d.editFrames = { $0[0].flags = 0x02 }
        invalid(
            "reserved-frame-flags", "HEADER frame flag bit 1 set", flags: ["Framing", "Resigned"],
            error: "reserved-flags", d)
        d = base
        d.editFrames = { $0[1].flags = 0x81 }
        invalid(
            "reserved-frame-flags-compressed", "TRANSACTIONS frame flags 0x81: compressed plus a reserved bit",
            flags: ["Framing", "Resigned"],
            error: "reserved-flags", d)
        var bytes = file
        bytes.replaceSubrange(
            attestation.start + 2..<attestation.start + 6,
            with: Wire.be32(UInt32(attestation.end - attestation.bodyStart + 1000)))
        invalid(
            "frame-length-past-end", "The ATTESTATION frame's length runs 1000 bytes past the end of the file",
            flags: ["Framing"],
            error: "truncated", bytes: bytes)
        bytes = file
        bytes.replaceSubrange(records.start + 2..<records.start + 6, with: [0xff, 0xff, 0xff, 0xff])
        invalid(
            "huge-frame-length", "A TRANSACTIONS frame length of 2^32-1; a reader must refuse it before allocating",
            flags: ["Framing", "Limits"],
            error: "frame-too-long", bytes: bytes)
        bytes = file
        bytes.replaceSubrange(records.start + 2..<records.start + 6, with: Wire.be32(16 * 1024 * 1024 + 1))
        invalid(
            "frame-length-over-limit", "A TRANSACTIONS frame length of 16 MiB + 1", flags: ["Framing", "Limits"],
            error: "frame-too-long",
            bytes: bytes)

        // §3.2 frame order.
        d = base
        d.editFrames = { $0.removeFirst() }
        invalid(
            "missing-header", "The first frame is TRANSACTIONS; the HEADER frame is missing",
            flags: ["Framing", "Resigned"],
            error: "frame-order", d)
        d = base
        d.editFrames = { $0.insert($0[0], at: 1) }
        invalid(
            "duplicate-header", "A second HEADER frame follows the first", flags: ["Framing", "Resigned"],
            error: "frame-order", d)
        d = base
        d.editFrames = { $0.removeAll { $0.type == Frame.attestation } }
        invalid(
            "missing-attestation", "The range has no ATTESTATION frame", flags: ["Framing", "Resigned"],
            error: "frame-order", d)
        d = base
        d.editFrames = { $0.append($0.last!) }
        invalid(
            "extra-attestation", "The ATTESTATION frame appears twice", flags: ["Framing", "Resigned"],
            error: "frame-order", d)
        d = base
        d.editFrames = { f in f.insert(f.removeLast(), at: 1) }
        invalid(
            "attestation-before-records", "The ATTESTATION frame comes before the TRANSACTIONS frame",
            flags: ["Framing", "Resigned"],
            error: "frame-order", d)
        d = base
        d.editFrames = { f in f.append(f[1]) }
        invalid(
            "records-after-attestation", "A second TRANSACTIONS frame follows the attestation",
            flags: ["Framing", "Resigned"],
            error: "frame-order", d)

        // §3.2 the signature frame.
        bytes = Array(file.dropLast(64 + 6))
        bytes += [Frame.signature, 0, 0, 0, 0, 63] + Array(file.suffix(64).dropLast())
        invalid(
            "signature-63-bytes", "The SIGNATURE frame holds 63 bytes", flags: ["Framing", "Signature"],
            error: "bad-signature-frame",
            bytes: bytes)
        bytes = Array(file.dropLast(64 + 6))
        bytes += [Frame.signature, 0, 0, 0, 0, 65] + Array(file.suffix(64)) + [0]
        invalid(
            "signature-65-bytes", "The SIGNATURE frame holds 65 bytes", flags: ["Framing", "Signature"],
            error: "bad-signature-frame",
            bytes: bytes)
        bytes = file
        bytes[signature.start + 1] = 1
        invalid(
            "compressed-signature-frame", "The SIGNATURE frame has the compressed flag",
            flags: ["Framing", "Signature"],
            error: "bad-signature-frame", bytes: bytes)
        invalid(
            "trailing-bytes", "One zero byte after the SIGNATURE frame", flags: ["Framing"], error: "trailing-bytes",
            bytes: file + [0])
        invalid(
            "second-signature", "The SIGNATURE frame appears twice", flags: ["Framing"], error: "trailing-bytes",
            bytes: file + Array(file[signature.start...]))
    }
}
