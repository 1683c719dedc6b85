import Crypto
import Foundation
import Testing
import TidemarkCore

/// `History.Token`: the version vector, its partial order, and its text and Codable forms.
@Suite struct TokenTests {
    static let a = Replica.ID(bytes: [UInt8](repeating: 0x0a, count: 16))!
    static let b = Replica.ID(bytes: [UInt8](repeating: 0x0b, count: 16))!
    static let c = Replica.ID(bytes: (0..<16).map { UInt8($0) })!

    // MARK: - Text form

    static let sampleTokens: [History.Token] = [
        .zero,
        History.Token(sequences: [a: 1]),
        History.Token(sequences: [a: 127, b: 128]),
        History.Token(sequences: [a: 3, b: 70_000, c: Int64.max]),
    ]

    @Test(arguments: sampleTokens)
    func textRoundTrip(token: History.Token) throws {
        let text = token.description
        #expect(text.hasPrefix("tm1."))
        #expect(text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
        let parsed = try History.Token(parsing: text)
        #expect(parsed == token)
        #expect(parsed.description == text)
    }

    @Test func textIgnoresSurroundingWhitespace() throws {
        let token = History.Token(sequences: [Self.a: 9])
        #expect(try History.Token(parsing: "  \(token)\n") == token)
    }

    @Test func textIsCanonicalWhateverTheInsertionOrder() {
        var first = History.Token.zero
        first[Self.b] = 2
        first[Self.a] = 1
        var second = History.Token.zero
        second[Self.a] = 1
        second[Self.b] = 2
        #expect(first.description == second.description)
    }

    @Test func zeroEntriesAreDropped() {
        let token = History.Token(sequences: [Self.a: 0, Self.b: 4])
        #expect(token.sequences == [Self.b: 4])
        #expect(token[Self.a] == 0)
        #expect(token == History.Token(sequences: [Self.b: 4]))
    }

    // MARK: - Codable

    @Test func codableRoundTrip() throws {
        struct Envelope: Codable, Equatable {
            var token: History.Token
            var tokens: [History.Token]
        }
        let envelope = Envelope(
            token: History.Token(sequences: [Self.a: 5, Self.b: 1]),
            tokens: [.zero, History.Token(sequences: [Self.c: 77])])
        let data = try JSONEncoder().encode(envelope)
        #expect(try JSONDecoder().decode(Envelope.self, from: data) == envelope)

        // The JSON form is the text form.
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["token"] as? String == envelope.token.description)
    }

    @Test func codableRejectsATamperedToken() throws {
        let json = Data(#"{"token":"tm1.not-a-real-token"}"#.utf8)
        struct Envelope: Codable { var token: History.Token }
        #expect(throws: History.TokenError.self) { try JSONDecoder().decode(Envelope.self, from: json) }
    }

    // MARK: - Partial order

    @Test func coversIsAPartialOrder() {
        let zero = History.Token.zero
        let x = History.Token(sequences: [Self.a: 2, Self.b: 1])
        let y = History.Token(sequences: [Self.a: 1, Self.b: 3])
        let both = History.Token(sequences: [Self.a: 2, Self.b: 3])

        // Reflexive, and everything covers zero.
        for t in [zero, x, y, both] {
            #expect(t.covers(t))
            #expect(t.covers(zero))
        }
        #expect(!zero.covers(x))

        // Concurrent: neither covers the other.
        #expect(!x.covers(y))
        #expect(!y.covers(x))

        // The merge is the least upper bound.
        #expect(x.merged(with: y) == both)
        #expect(y.merged(with: x) == both)
        #expect(both.covers(x) && both.covers(y))
        #expect(!x.covers(both) && !y.covers(both))

        // A replica the other token lacks counts as 0.
        let onlyC = History.Token(sequences: [Self.c: 1])
        #expect(!x.covers(onlyC))
        #expect(!onlyC.covers(x))
        #expect(x.merged(with: onlyC).covers(onlyC))
    }

    @Test func includes() {
        let token = History.Token(sequences: [Self.a: 3])
        #expect(token.includes(replica: Self.a, sequence: 3))
        #expect(!token.includes(replica: Self.a, sequence: 4))
        #expect(!token.includes(replica: Self.b, sequence: 1))
    }

    // MARK: - Rejection

    @Test func textWithoutThePrefixIsNotAToken() {
        #expect(throws: History.TokenError.notAToken("hello")) { try History.Token(parsing: "hello") }
        #expect(throws: History.TokenError.self) { try History.Token(parsing: "") }
    }

    /// Every single-character change to a real token's body is rejected (checksum, alphabet, or
    /// structure), and none parses as some other token.
    @Test func everyTamperedCharacterIsRejected() throws {
        let text = History.Token(sequences: [Self.a: 300, Self.b: 7]).description
        let body = Array(text.dropFirst(4))
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for index in body.indices {
            // A last character that carries padding bits may change without changing any byte.
            if index == body.count - 1 && body.count % 4 != 0 { continue }
            var tampered = body
            tampered[index] = alphabet[(alphabet.firstIndex(of: body[index])! + 1) % alphabet.count]
            let candidate = "tm1." + String(tampered)
            #expect(throws: History.TokenError.self, "position \(index)") { try History.Token(parsing: candidate) }
        }
    }

    /// Ways a token's text gets damaged in transit.
    enum Damage: String, CaseIterable, Sendable {
        case cutShort, characterOutsideBase64URL, padding, extraBytes, checksumOnly

        func apply(_ text: String) -> String {
            switch self {
            case .cutShort: return String(text.dropLast(3))
            case .characterOutsideBase64URL: return text + "+"
            case .padding: return text + "="
            case .extraBytes: return text + "AAAA"
            case .checksumOnly: return "tm1.AAAAAA"
            }
        }
    }

    @Test(arguments: Damage.allCases)
    func damagedTextIsMalformed(damage: Damage) {
        let text = damage.apply(History.Token(sequences: [Self.a: 12]).description)
        #expect(throws: History.TokenError.self, "\(damage): \(text)") { try History.Token(parsing: text) }
    }

    /// Bodies that carry a valid checksum but break the encoding rules must still be rejected:
    /// the text form is canonical, so equal tokens always have equal text.
    static let nonCanonicalBodies: [(label: String, body: [UInt8], reason: String)] = [
        ("entries out of order", entry(b, [1]) + entry(a, [1]), "entries out of order"),
        ("duplicate entry", entry(a, [1]) + entry(a, [2]), "entries out of order"),
        ("zero sequence", entry(a, [0]), "bad sequence number"),
        ("non-canonical varint", entry(a, [0x81, 0x00]), "bad sequence number"),
        (
            "sequence past Int64.max", entry(a, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            "bad sequence number"
        ),
        ("truncated varint", entry(a, [0x81]), "bad sequence number"),
        ("truncated id", Array(a.bytes.prefix(10)), "truncated entry"),
    ]

    @Test(arguments: nonCanonicalBodies)
    func nonCanonicalBodiesAreRejected(label: String, body: [UInt8], reason: String) {
        let text = "tm1." + Base64URL.encode(body + Array(SHA256.hash(data: body).prefix(4)))
        #expect(throws: History.TokenError.malformed(text, reason: reason), "\(label)") {
            try History.Token(parsing: text)
        }
    }

    @Test func errorDescriptionsNameTheProblem() {
        let notAToken = History.TokenError.notAToken("xyz").description
        #expect(notAToken.contains("'xyz'"))
        #expect(notAToken.contains("tm1."))
        let long = String(repeating: "q", count: 100)
        #expect(History.TokenError.malformed(long, reason: "r").description.count < 80)
    }

    static func entry(_ id: Replica.ID, _ varint: [UInt8]) -> [UInt8] { id.bytes + varint }
}
