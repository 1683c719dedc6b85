import GRDB

extension Statement {
    /// The statement's first keyword, upper-cased, past white space, semicolons and comments.
    var leadingKeyword: String {
        var rest = Substring(sql)
        while true {
            rest = rest.drop { $0.isWhitespace || $0 == ";" }
            if rest.hasPrefix("--") {
                rest = rest.drop { $0 != "\n" }
            } else if rest.hasPrefix("/*") {
                rest = rest.dropFirst(2)
                rest = rest.range(of: "*/").map { rest[$0.upperBound...] } ?? ""
            } else {
                return rest.prefix { $0.isLetter }.uppercased()
            }
        }
    }

    /// Whether the statement begins, ends or nests a transaction.
    var isTransactionControl: Bool {
        ["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"].contains(leadingKeyword)
    }
}
