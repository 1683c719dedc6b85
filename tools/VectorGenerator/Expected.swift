/// The expected decoding of a valid vector (Protocol/bundle.md §10.2), derived from the draft the
/// bundle was built from, never from a decoder.
extension Draft {
    /// Long by design: the expected JSON's keys in the order bundle.md §10.2 lists them, each beside
    /// the draft field it comes from.
    func expectedJSON(_ built: Built) -> JSON {
        let kindWord = [1: "changes", 2: "snapshot", 3: "watermark"][Int(kind)] ?? "unknown"
        var pairs: [(String, JSON)] = [
            ("kind", .string(kindWord)),
            (
                "sender",
                .object([
                    ("name", .string(senderName)), ("publicKey", .hex(sender.publicKey)), ("replica", .hex(sender.id)),
                ])
            ),
            ("created", .integer(created)),
            ("since", Self.token(since)),
            ("through", Self.token(through)),
            (
                "tables",
                .array(
                    tables.map { t in
                        .object([
                            ("name", .string(t.name)), ("keyColumns", .array(t.keyColumns.map(JSON.string))),
                            ("columns", .array(t.columns.map(JSON.string))),
                        ])
                    })
            ),
            (
                "ranges",
                .array(
                    ranges.map { r in
                        .object([
                            ("origin", .hex(r.origin)), ("publicKey", .hex(r.publicKey)), ("first", .integer(r.first)),
                            ("last", .integer(r.last)), ("previous", .hex(r.previous)),
                        ])
                    })
            ),
            ("transactions", .array(zip(transactions, built.chainHashes).map { transaction($0, chainHash: $1!) })),
            (
                "attestations",
                .array(
                    built.attestations.map { a in
                        .object([
                            ("origin", .hex(a.origin)), ("sequence", .integer(a.sequence)), ("head", .hex(a.head)),
                            ("signature", .hex(a.signature)),
                        ])
                    })
            ),
            ("digest", .hex(built.digest)),
            ("signature", .hex(built.signature)),
        ]
        // Only a snapshot carries row states; the key is absent from other kinds' JSON.
        if kind == 2 { pairs.insert(("rowStates", .array(rowStates.map(Self.rowState))), at: 8) }
        // Only a snapshot with generation floors (§3.3, attribute 4) has the key; it follows the lineage.
        if let floors {
            let entries = floors.map {
                JSON.object([("name", .string($0.name)), ("floor", .integer(Int64($0.floor)))])
            }
            pairs.insert(("generationFloors", .array(entries)), at: 7)
        }
        // Only a bundle with a schema lineage (Protocol/schema.md §4) has the key.
        if !schemaChanges.isEmpty {
            let lineage = zip(schemaIDs, schemaChanges).enumerated().map { n, entry in
                JSON.object([("position", .integer(Int64(n + 1))), ("id", .hex(entry.0)), ("change", .hex(entry.1))])
            }
            pairs.insert(("schemaLineage", .array(lineage)), at: 7)
        }
        // Only a watermark with a row digest (Protocol/exchange.md §8.3) has the key.
        if let rowDigest {
            let entries = rowDigest.map { e in
                JSON.object([
                    ("name", .string(e.name)), ("rows", .integer(Int64(e.rows))),
                    ("sum", .hex(Wire.be64(e.sum))),
                ])
            }
            pairs.insert(("rowDigest", .array(entries)), at: 7)
        }
        return .object(pairs)
    }

    /// §10.2: `{"table", "generation", "key": [[name, value], …], "columns": [[name, value, clock], …]}`, the clock
    /// `{"timestamp", "origin"}` or null.
    static func rowState(_ r: RowStateRecord) -> JSON {
        .object([
            ("table", .string(r.table)), ("generation", .integer(Int64(bitPattern: r.generation))),
            ("key", .array(r.key.map { .array([.string($0.name), .value($0.value)]) })),
            ("columns", .array(r.cells.map { .array([.string($0.name), .value($0.value), clock($0.clock)]) })),
        ])
    }

    static func clock(_ c: (timestamp: Int64, origin: [UInt8])?) -> JSON {
        guard let c else { return .null }
        return .object([("timestamp", .integer(c.timestamp)), ("origin", .hex(c.origin))])
    }

    static func token(_ t: Token) -> JSON { .object(t.entries.map { (Wire.hex($0.id), .integer($0.sequence)) }) }

    func transaction(_ t: Transaction, chainHash: [UInt8]) -> JSON {
        .object([
            ("origin", .hex(t.origin.id)),
            ("sequence", .integer(t.sequence)),
            ("timestamp", .integer(t.timestamp)),
            ("author", .optional(t.author)),
            ("contextName", .optional(t.contextName)),
            ("processID", t.processID.map { .integer(Int64($0)) } ?? .null),
            (
                "changes",
                .array(
                    t.changes.map { c in
                        .object([
                            ("type", .string(c.kind.word)), ("generation", .integer(Int64(bitPattern: c.generation))),
                            ("table", .string(c.table)),
                            ("key", .array(c.key.map { .array([.string($0.name), .value($0.value)]) })),
                            ("columns", .array(c.columns.map { .array([.string($0.name), .value($0.value)]) })),
                        ])
                    })
            ),
            ("schemaVersion", schemaID(of: t).map(JSON.hex) ?? .null),
            ("chainHash", .hex(chainHash)),
        ])
    }
}
