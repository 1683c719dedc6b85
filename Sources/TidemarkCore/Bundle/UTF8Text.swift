/// Text read from a bundle: valid UTF-8, or refused (R20 `invalid-utf8`).
enum UTF8Text {
    /// The string `bytes` encode, or nil when they are not valid UTF-8. ASCII, most text, is checked
    /// eight bytes at a time and then needs no validation; the rest goes through the standard
    /// library's, which is generic and costs several times more per value.
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        isASCII(bytes) ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }

    /// Whether every byte is below 0x80.
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let raw = UnsafeRawBufferPointer(bytes)
        var i = 0
        while i + 8 <= raw.count {
            if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            i += 8
        }
        while i < raw.count {
            if raw[i] & 0x80 != 0 { return false }
            i += 1
        }
        return true
    }
}
