import Tidemark

/// How `status` and `inspect` show a row digest (Protocol/exchange.md §8).
enum DigestWording {
    /// One line: the rows and tables of the app it counts, and its fingerprint (which covers
    /// Tidemark's own replicated tables too; `--json` lists them).
    static func line(_ digest: RowDigest) -> String {
        let tables = digest.tables.filter { !$0.name.hasPrefix("tidemark_") }
        let rows = tables.reduce(UInt64(0)) { $0 + $1.rows }
        return "\(rows) rows in \(tables.count) tables, digest \(digest.fingerprint)"
    }

    /// `{"fingerprint", "tables": [{"name", "rows", "sum"}]}`, the sum as 16 hex digits.
    static func json(_ digest: RowDigest) -> JSON {
        [
            "fingerprint": .string(digest.fingerprint),
            "tables": .array(
                digest.tables.map {
                    [
                        "name": .string($0.name), "rows": .integer(Int($0.rows)),
                        "sum": .string(HexCoding.encode(bigEndian: $0.sum)),
                    ] as JSON
                }),
        ]
    }
}
