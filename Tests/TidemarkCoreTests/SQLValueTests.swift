import Foundation
import Testing
import TidemarkCore

/// `SQLValue`: exact equality and the JSON and text renderings `sync log` prints.
@Suite struct SQLValueTests {
    @Test func equalityKeepsStorageClassAndBits() {
        #expect(SQLValue.integer(1) != .real(1))
        #expect(SQLValue.text("a") != .blob([0x61]))
        #expect(SQLValue.real(0.0) != .real(-0.0))
        #expect(SQLValue.real(.nan) == .real(.nan))
        #expect(SQLValue.null == .null)
        #expect(Set([SQLValue.real(0.0), .real(-0.0), .integer(0)]).count == 3)
    }

    static let fragments: [(value: SQLValue, json: String)] = [
        (.null, "null"),
        (.integer(Int64.max), "9223372036854775807"),
        (.integer(Int64.min), "-9223372036854775808"),
        (.real(2.5), "2.5"),
        (.real(3), "3.0"),
        (.real(.infinity), #"{"real":"Infinity"}"#),
        (.real(-.infinity), #"{"real":"-Infinity"}"#),
        (.real(.nan), #"{"real":"nan","bits":"7ff8000000000000"}"#),
        (.real(-Double(nan: 5, signaling: false)), #"{"real":"nan","bits":"fff8000000000005"}"#),
        (.text("é \"q\" \n 🌊"), #""é \"q\" \n 🌊""#),
        (.text("\u{01}"), #""\u0001""#),
        (.blob([0x00, 0xff, 0x10]), #"{"base64":"AP8Q"}"#),
    ]

    @Test(arguments: fragments)
    func jsonFragment(value: SQLValue, json: String) {
        #expect(value.jsonFragment == json)
    }

    @Test func jsonFragmentsParseBackToTheSameStorageClass() throws {
        for (value, check) in [
            (SQLValue.integer(Int64.max), { (n: Any) in (n as? NSNumber)?.int64Value == Int64.max }),
            (.real(3), { (n: Any) in (n as? NSNumber).map { String(cString: $0.objCType) } == "d" }),
        ] as [(SQLValue, (Any) -> Bool)] {
            let parsed = try JSONSerialization.jsonObject(with: Data("[\(value.jsonFragment)]".utf8)) as? [Any]
            #expect(check(try #require(parsed?.first)), "\(value)")
        }
    }

    @Test func textRendering() {
        #expect(SQLValue.text("it's").description == "'it''s'")
        #expect(SQLValue.text("").description == "''")
        #expect(SQLValue.text("x\u{0}y").description == "'x' || char(0) || 'y'")
        #expect(SQLValue.text("a\r\nb\n").description == "'a' || char(13, 10) || 'b' || char(10)")
        #expect(SQLValue.text("\t'\u{2028}").description == "char(9) || '''' || char(8232)")
        #expect(SQLValue.blob([0x00, 0xab]).description == "x'00ab'")
        #expect(SQLValue.real(-0.0).description == "-0.0")
        #expect(SQLValue.real(.infinity).description == "9e999")
        #expect(SQLValue.real(-.infinity).description == "-9e999")
        #expect(SQLValue.null.description == "NULL")
    }
}
