import Foundation
import TidemarkCore

/// An annotated hex listing of a well-formed bundle, written by walking it as Protocol/bundle.md
/// describes (used for §8). Every byte of the file appears exactly once; the records of a
/// compressed frame are listed after the file, at offsets in the record stream.
struct Dump {
    private var lines: [String] = []
    private let file: [UInt8]

    static func annotate(_ file: [UInt8]) -> String {
        var d = Dump(file: file)
        d.run()
        return d.lines.joined(separator: "\n") + "\n"
    }

    private init(file: [UInt8]) { self.file = file }

    /// One field: its offset, its bytes (16 a line) and what they mean.
    private mutating func emit(_ offset: Int, _ bytes: ArraySlice<UInt8>, _ text: String) {
        let all = Array(bytes)
        var i = 0
        repeat {
            let chunk = all[i..<min(i + 16, all.count)]
            let hex = chunk.map { String(format: "%02x", $0) }.joined(separator: " ")
            let pad = hex.padding(toLength: 48, withPad: " ", startingAt: 0)
            lines.append((String(format: "%04x  ", offset + i) + pad + " " + (i == 0 ? text : "")).trimmingTrailing())
            i += 16
        } while i < all.count
    }

    private mutating func section(_ title: String) { lines.append("      ; " + title) }

    private mutating func run() {
        emit(0, file[0..<8], "magic")
        emit(8, file[8..<10], "version = \(Int(file[8]) << 8 | Int(file[9]))")
        emit(10, file[10..<12], "flags = 0")
        emit(12, file[12..<44], "sender public key (Ed25519)")
        let spans = FrameWalk.spans(file)
        let recordFrames = spans.filter { $0.type == 0x02 }
        let inline = recordFrames.count == 1 && recordFrames[0].flags & 1 == 0
        var records: [UInt8] = []
        for span in spans {
            let name =
                [0x01: "HEADER", 0x02: "TRANSACTIONS", 0x03: "ATTESTATION", 0x7f: "SIGNATURE"][Int(span.type)] ?? "?"
            section("\(name) frame")
            emit(
                span.start, file[span.start..<span.start + 1],
                "frame type 0x\(String(format: "%02x", span.type)) (\(name))")
            emit(
                span.start + 1, file[span.start + 1..<span.start + 2],
                "frame flags = \(span.flags)\(span.flags & 1 == 1 ? " (compressed)" : "")")
            emit(span.start + 2, file[span.start + 2..<span.start + 6], "payload length = \(span.end - span.bodyStart)")
            var body = Array(file[span.bodyStart..<span.end])
            var bodyAt = span.bodyStart
            if span.flags & 1 == 1 {
                let raw = Int(body[0]) << 24 | Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3])
                emit(span.bodyStart, file[span.bodyStart..<span.bodyStart + 4], "raw length = \(raw)")
                emit(span.bodyStart + 4, file[span.bodyStart + 4..<span.end], "raw DEFLATE stream (RFC 1951)")
                body = Zlib.inflate(Array(body.dropFirst(4)), limit: 16 << 20) ?? []
                bodyAt = 0
                if span.type != 0x02 { section("\(name) payload, inflated (offsets in the payload)") }
            }
            switch span.type {
            case 0x01: header(body, at: bodyAt)
            case 0x02:
                records += body
                if inline { recordList(body, at: bodyAt) }
            case 0x03: attestation(body, at: bodyAt)
            default:
                emit(
                    span.bodyStart, file[span.bodyStart..<span.end],
                    "Ed25519 signature of \"tidemark-bundle-v1\\0\" || SHA-256(bytes 0000-\(String(format: "%04x", span.start - 1)))"
                )
            }
        }
        if !inline && !records.isEmpty {
            section("the record stream: TRANSACTIONS payloads inflated and concatenated (offsets in the stream)")
            recordList(records, at: 0)
        }
    }

    // MARK: - Fields

    private struct Cursor {
        let bytes: [UInt8]
        let base: Int
        var at = 0
        mutating func varint() -> (UInt64, Range<Int>) {
            let start = at
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = bytes[at]
                at += 1
                v |= UInt64(b & 0x7f) << shift
                if b & 0x80 == 0 { break }
                shift += 7
            }
            return (v, start..<at)
        }
        mutating func take(_ n: Int) -> Range<Int> {
            defer { at += n }
            return at..<at + n
        }
    }

    private mutating func put(_ c: Cursor, _ r: Range<Int>, _ text: String) {
        emit(c.base + r.lowerBound, c.bytes[r], text)
    }

    private mutating func name(_ c: inout Cursor, _ what: String) {
        let (n, lr) = c.varint()
        let r = c.take(Int(n))
        let text = String(decoding: c.bytes[r], as: UTF8.self)
        put(
            c, lr.lowerBound..<r.upperBound,
            "\(what): length \(n), \"\(text.count > 40 ? String(text.prefix(37)) + "..." : text)\"")
    }

    private mutating func token(_ c: inout Cursor, _ what: String) {
        let (n, r) = c.varint()
        put(c, r, "\(what): \(n) entr\(n == 1 ? "y" : "ies")")
        for _ in 0..<n {
            put(c, c.take(16), "  replica id")
            let (s, sr) = c.varint()
            put(c, sr, "  sequence = \(s)")
        }
    }

    private func time(_ packed: UInt64) -> String {
        let t = HLCTimestamp(packed: Int64(bitPattern: packed))
        return "\(packed) = \(t.iso8601) counter \(t.counter)"
    }

    private mutating func header(_ body: [UInt8], at base: Int) {
        var c = Cursor(bytes: body, base: base)
        let kind = c.take(1)
        put(
            c, kind,
            "kind = \(body[kind.lowerBound]) (\(["?", "changes", "snapshot", "watermark"][min(3, Int(body[kind.lowerBound]))]))"
        )
        name(&c, "sender name")
        let (created, cr) = c.varint()
        put(c, cr, "created = \(time(created))")
        token(&c, "since")
        token(&c, "through")
        let (tables, tr) = c.varint()
        put(c, tr, "table count = \(tables)")
        for _ in 0..<tables {
            name(&c, "table name")
            let (k, kr) = c.varint()
            put(c, kr, "  key column count = \(k)")
            for _ in 0..<k { name(&c, "  key column") }
            let (n, nr) = c.varint()
            put(c, nr, "  column count = \(n)")
            for _ in 0..<n { name(&c, "  column") }
        }
        let (ranges, rr) = c.varint()
        put(c, rr, "origin range count = \(ranges)")
        for _ in 0..<ranges {
            put(c, c.take(32), "origin public key")
            let (f, fr) = c.varint()
            put(c, fr, "  first = \(f)")
            let (l, lr) = c.varint()
            put(c, lr, "  last = \(l)")
            put(c, c.take(32), "  previous chain hash")
        }
        let (a, ar) = c.varint()
        put(c, ar, "header attribute count = \(a)")
    }

    private mutating func recordList(_ body: [UInt8], at base: Int) {
        var c = Cursor(bytes: body, base: base)
        while c.at < body.count {
            put(c, c.take(16), "transaction: origin replica id")
            let (s, sr) = c.varint()
            put(c, sr, "  sequence = \(s)")
            let (t, tr) = c.varint()
            put(c, tr, "  timestamp = \(time(t))")
            for what in ["author", "context name"] {
                let p = c.take(1)
                if body[p.lowerBound] == 1 {
                    put(c, p, "  \(what) present")
                    name(&c, "  \(what)")
                } else {
                    put(c, p, "  no \(what)")
                }
            }
            let p = c.take(1)
            if body[p.lowerBound] == 1 {
                put(c, p, "  process id present")
                let (v, vr) = c.varint()
                put(c, vr, "  process id = \(Int32(bitPattern: UInt32(v)))")
            } else {
                put(c, p, "  no process id")
            }
            let (n, nr) = c.varint()
            put(c, nr, "  change count = \(n)")
            for _ in 0..<n { change(&c) }
            let (a, ar) = c.varint()
            put(c, ar, "  transaction attribute count = \(a)")
        }
    }

    private mutating func change(_ c: inout Cursor) {
        let op = c.take(1)
        put(
            c, op,
            "  change: type \(c.bytes[op.lowerBound]) (\(["?", "insert", "update", "delete"][min(3, Int(c.bytes[op.lowerBound]))]))"
        )
        let (g, gr) = c.varint()
        put(c, gr, "    generation = \(g)")
        name(&c, "    table")
        for what in ["key column", "column"] {
            let (n, nr) = c.varint()
            put(c, nr, "    \(what) count = \(n)")
            for _ in 0..<n {
                name(&c, "    \(what) name")
                value(&c)
            }
        }
        let (a, ar) = c.varint()
        put(c, ar, "    change attribute count = \(a)")
    }

    private mutating func value(_ c: inout Cursor) {
        let tag = c.bytes[c.at]
        let start = c.at
        c.at += 1
        switch tag {
        case 0: put(c, start..<c.at, "      NULL")
        case 1:
            let (v, r) = c.varint()
            put(
                c, start..<r.upperBound,
                "      INTEGER, zigzag \(v) = \(Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1))")
        case 2:
            let r = c.take(8)
            let bits = c.bytes[r].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            put(c, start..<r.upperBound, "      REAL \(Double(bitPattern: bits))")
        default:
            let (n, r) = c.varint()
            let data = c.take(Int(n))
            let shown = tag == 3 ? "\"" + String(decoding: c.bytes[data], as: UTF8.self) + "\"" : "\(n) bytes"
            put(c, start..<data.upperBound, "      \(tag == 3 ? "TEXT" : "BLOB"), length \(n): \(shown)")
            _ = r
        }
    }

    private mutating func attestation(_ body: [UInt8], at base: Int) {
        var c = Cursor(bytes: body, base: base)
        put(c, c.take(16), "origin replica id")
        let (s, sr) = c.varint()
        put(c, sr, "sequence = \(s)")
        put(c, c.take(32), "chain head after that transaction")
        put(c, c.take(64), "origin's Ed25519 signature of the attestation message")
    }
}

extension String {
    func trimmingTrailing() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
