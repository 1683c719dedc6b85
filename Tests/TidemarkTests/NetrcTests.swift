import Testing

@testable import Tidemark

/// A netrc file read as curl reads it: entries by host, a default, macros skipped, and values in
/// double quotes, which may hold blanks, quotes and C escapes.
@Suite struct NetrcTests {
    static func entries(_ text: String) throws -> [String: (String, String)] {
        try Netrc.parse(text, path: "netrc").mapValues { ($0.login, $0.password) }
    }

    @Test func plainEntriesADefaultAndAMacroAreReadAsCurlReadsThem() throws {
        let entries = try Self.entries(
            """
            # a comment
            machine Example.COM login alice password s3cret
            macdef init
            machine in.a.macro login no password no

            default login anyone password guess
            """)
        #expect(entries.keys.sorted() == ["", "example.com"])
        #expect(entries["example.com"]! == ("alice", "s3cret"))
        #expect(entries[""]! == ("anyone", "guess"))
    }

    @Test func aQuotedValueHoldsBlanksQuotesAndEscapes() throws {
        let entries = try Self.entries(
            #"""
            machine a login "alice" password "S3cr3t-Pa55"
            machine b login bob password "with a blank and a \"quote\" and a \\ backslash"
            machine c login "c\tt" password pass"word
            """#)
        #expect(entries["a"]! == ("alice", "S3cr3t-Pa55"))
        #expect(entries["b"]! == ("bob", #"with a blank and a "quote" and a \ backslash"#))
        #expect(entries["c"]! == ("c\tt", #"pass"word"#), "a quote inside a word is the quote itself")
    }
}
