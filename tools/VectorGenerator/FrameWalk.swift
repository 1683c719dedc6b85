/// Where the frames of a well-formed bundle lie (§3.2), for mutations and the dump.
struct FrameSpan {
    var type: UInt8
    var flags: UInt8
    /// Offset of the frame's type byte.
    var start: Int
    /// Offset of the first payload byte.
    var bodyStart: Int
    /// Offset just past the payload.
    var end: Int
}

enum FrameWalk {
    static let preambleLength = 44

    /// The frames after the preamble, stopping at the first one that does not fit.
    static func spans(_ file: [UInt8]) -> [FrameSpan] {
        var out: [FrameSpan] = []
        var at = preambleLength
        while at + 6 <= file.count {
            let length = Int(file[at + 2]) << 24 | Int(file[at + 3]) << 16 | Int(file[at + 4]) << 8 | Int(file[at + 5])
            guard at + 6 + length <= file.count else { break }
            out.append(
                FrameSpan(type: file[at], flags: file[at + 1], start: at, bodyStart: at + 6, end: at + 6 + length))
            at += 6 + length
        }
        return out
    }

    /// The first frame of `type`.
    static func first(_ type: UInt8, in file: [UInt8]) -> FrameSpan { spans(file).first { $0.type == type }! }
}
