import Foundation

// MARK: - Hash defaults

extension RowDigest {
    /// Whether `text`, a column's default as SQLite's `pragma_table_xinfo` reports it, is a literal
    /// that may be the column's hash default (exchange.md §8.1): a string in single quotes, a blob
    /// literal, TRUE, FALSE, or a decimal number with at most one sign. Expressions, NULL,
    /// `CURRENT_TIME` and the like, double-quoted strings and hexadecimal numbers (which rows that
    /// predate an added column may read as text) are not.
    public static func isLiteralDefault(_ text: String) -> Bool {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if ["TRUE", "FALSE"].contains(trimmed.uppercased()) { return true }
        var s = Substring(trimmed).utf8
        if s.first == quote { return isQuoted(s) }
        if let first = s.first, first | 0x20 == UInt8(ascii: "x"), s.dropFirst().first == quote {
            let digits = s.dropFirst()
            return isQuoted(digits) && digits.count % 2 == 0 && digits.dropFirst().dropLast().allSatisfy(isHexDigit)
        }
        if s.first == UInt8(ascii: "+") || s.first == UInt8(ascii: "-") { s = s.dropFirst() }
        var digits = 0
        while let c = s.first, isDigit(c) { (digits, s) = (digits + 1, s.dropFirst()) }
        if s.first == UInt8(ascii: ".") {
            s = s.dropFirst()
            while let c = s.first, isDigit(c) { (digits, s) = (digits + 1, s.dropFirst()) }
        }
        guard digits > 0 else { return false }
        if let e = s.first, e | 0x20 == UInt8(ascii: "e") {
            s = s.dropFirst()
            if s.first == UInt8(ascii: "+") || s.first == UInt8(ascii: "-") { s = s.dropFirst() }
            guard let c = s.first, isDigit(c) else { return false }
            while let c = s.first, isDigit(c) { s = s.dropFirst() }
        }
        return s.isEmpty
    }

    private static let quote = UInt8(ascii: "'")

    /// Whether `s` is quoted by single quotes, with every quote inside doubled.
    private static func isQuoted(_ s: Substring.UTF8View) -> Bool {
        guard s.count >= 2, s.first == quote, s.last == quote else { return false }
        var inside = s.dropFirst().dropLast()
        while let c = inside.first {
            inside = inside.dropFirst()
            if c == quote {
                guard inside.first == quote else { return false }
                inside = inside.dropFirst()
            }
        }
        return true
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        isDigit(c) || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "f"))
    }
}
