import Testing
import TidemarkCore

/// Which declared defaults may be a column's hash default (Protocol/exchange.md §8.1): literals
/// only, as SQLite's `pragma_table_xinfo` reports them.
@Suite struct RowDigestLiteralTests {
    @Test(arguments: [
        "'none'", "''", "'it''s'", " 'padded' ", "X'0a'", "x'00FF'", "X''", "TRUE", "false", "0", "-1", "+7",
        "1.5", ".5", "5.", "-.25", "1e3", "2E-7",
    ])
    func aLiteralMayBeAHashDefault(_ text: String) {
        #expect(RowDigest.isLiteralDefault(text))
    }

    @Test(arguments: [
        "NULL", "CURRENT_TIMESTAMP", "\"abc\"", "1 + 1", "abs(-2)", "'a' || 'b'", "'unclosed", "'a'b'", "X'0'",
        "X'0g'", "--1", "+-1", "1e", "1e+", ".", "0x10", "-0XfF", "0x", "-'a'", "", "1.2.3", "random()",
    ])
    func anythingElseIsNot(_ text: String) {
        #expect(!RowDigest.isLiteralDefault(text))
    }
}
