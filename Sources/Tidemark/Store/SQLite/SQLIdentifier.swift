extension String {
    /// The name as an SQL identifier: in double quotes, each double quote within it doubled, so
    /// that any name SQLite accepts reads as itself (`"my ""table"""`). GRDB's
    /// `quotedDatabaseIdentifier` leaves a double quote within the name as it is.
    var quotedIdentifier: String { "\"" + replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

extension String {
    /// The text as an SQL string literal: in single quotes, each single quote within it doubled.
    var quotedLiteral: String { "'" + replacingOccurrences(of: "'", with: "''") + "'" }
}
