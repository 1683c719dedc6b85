/// §3.3 the header, §2.3 tokens. Every vector is re-signed and, where the defect leaves the
/// transactions intact, re-attested.
extension Catalog {
    /// Long by design: the catalogue of header vectors, one entry each, in the order of the spec.
    mutating func addHeader() {
        let w = self.w
        let base = alice(1...2)
        let flags = ["Header", "Resigned"]

        var d = base
        d.kind = 4
        invalid("unknown-kind", "Bundle kind 4", flags: flags, error: "unsupported-kind", d)
        d.kind = 0
        invalid("kind-zero", "Bundle kind 0", flags: flags, error: "unsupported-kind", d)
        d.kind = 2
        invalid(
            "snapshot-with-ranges",
            "A snapshot (kind 2) that carries a range and transactions: only kind 1 has ranges", flags: flags,
            error: "bad-header", d)
        d = base
        d.kind = 3
        invalid(
            "watermark-with-ranges",
            "A watermark (kind 3) that carries a range and transactions: only kind 1 has ranges", flags: flags,
            error: "bad-header", d)

        d = base
        d.senderName = ""
        invalid("empty-sender-name", "The sender name is empty", flags: flags, error: "empty-name", d)
        d = base
        d.senderName = String(repeating: "n", count: 4097)
        invalid(
            "sender-name-too-long", "A 4097-byte sender name", flags: flags + ["Limits"], error: "limit-exceeded", d)
        d = base
        d.senderName = "alXce"
        d.editHeader = { $0.replaceUnique(Wire.name("alXce"), with: [5, 0x61, 0x6c, 0xc3, 0x28, 0x65]) }
        invalid(
            "sender-name-invalid-utf8", "The sender name holds the invalid UTF-8 sequence C3 28", flags: flags,
            error: "invalid-utf8", d)
        d = base
        d.editHeader = { h in
            let created = Wire.varint(UInt64(bitPattern: base.created))
            h.replaceUnique(created, with: created.dropLast().map { $0 } + [created.last! | 0x80, 0x00])
        }
        invalid(
            "header-non-minimal-varint", "The `created` varint has a redundant trailing 0x00 group",
            flags: flags + ["Canonical"],
            error: "bad-varint", d)
        d = base
        d.editHeader = { h in
            h.replaceUnique(
                Wire.varint(UInt64(bitPattern: base.created)),
                with: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])
        }
        invalid(
            "header-varint-overflow", "A 10-byte `created` varint whose value exceeds 2^64-1", flags: flags,
            error: "bad-varint", d)

        // §2.3 tokens.
        let ids = [w.alice.id, w.bob.id, w.carol.id].sorted { $0.lexicographicallyPrecedes($1) }
        d = base
        d.since = Token(entries: [(ids[1], 1), (ids[0], 1)])
        invalid(
            "token-not-ascending", "The `since` token lists replica ids in descending order",
            flags: flags + ["Canonical"],
            error: "bad-token", d)
        d = base
        d.through = Token(entries: [(ids[0], 2), (ids[0], 2)])
        invalid(
            "token-duplicate-entry", "The `through` token lists one replica twice", flags: flags + ["Canonical"],
            error: "bad-token", d)
        d = base
        d.since = Token(entries: [(ids[2], 0)])
        invalid(
            "token-zero-sequence", "A token entry with sequence number 0", flags: flags + ["Canonical"],
            error: "bad-token", d)
        d = base
        d.through = Token(entries: [(w.alice.id, Int64.min)])
        invalid(
            "token-sequence-too-large", "A token entry with sequence number 2^63", flags: flags, error: "bad-token", d)

        // §3.3 tables.
        func table(_ change: (inout Table) -> Void) -> Draft {
            var d = base
            change(&d.tables[0])
            return d
        }
        invalid(
            "table-columns-not-sorted", "The `notes` columns are listed as id, body, pinned, title",
            flags: flags + ["Canonical"],
            error: "columns-not-canonical", table { $0.columns = ["id", "body", "pinned", "title"] })
        invalid(
            "table-duplicate-column", "The `notes` columns list `pinned` twice", flags: flags + ["Canonical"],
            error: "columns-not-canonical",
            table { $0.columns = ["body", "id", "pinned", "pinned", "title"] })
        invalid(
            "table-key-not-a-column", "The key column `id` is missing from the column list", flags: flags,
            error: "bad-header",
            table { $0.columns = ["body", "pinned", "title"] })
        invalid(
            "table-duplicate-key-column", "The key lists `id` twice", flags: flags, error: "bad-header",
            table { $0.keyColumns = ["id", "id"] })
        invalid(
            "table-no-key-columns", "A table with zero key columns", flags: flags, error: "bad-column-count",
            table { $0.keyColumns = [] })
        invalid(
            "table-empty-column-name", "A column with an empty name", flags: flags, error: "empty-name",
            table { $0.columns = ["", "body", "id", "pinned", "title"] })
        invalid(
            "table-too-many-columns", "A table with 32768 columns, one past the limit", flags: flags + ["Limits"],
            error: "bad-column-count",
            table { $0.columns = (0..<32764).map { "a\($0 + 10000)" } + ["body", "id", "pinned", "title"] })
        var equivalent = Draft(
            world: w, sender: w.alice, created: World.time(60), since: .zero, through: .zero,
            tables: [Table(name: "menu", keyColumns: ["caf\u{e9}"], columns: ["cafe\u{301}", "drink"])],
            transactions: [])
        equivalent.kind = 1
        invalid(
            "equivalent-key-not-a-column",
            "The key column \"café\" (U+00E9) is not among the columns, which list \"cafe\u{301}\" "
                + "(e + U+0301): canonically equivalent, different bytes", flags: flags + ["UTF8"], error: "bad-header",
            equivalent)
        d = base
        d.tables.append(World.notes)
        invalid("table-listed-twice", "The `notes` table appears twice", flags: flags, error: "bad-header", d)
        d = base
        d.editHeader = { h in
            h.replaceUnique(Wire.varint(3) + Wire.name("notes"), with: Wire.varint(4097) + Wire.name("notes"))
        }
        invalid("too-many-tables", "A table count of 4097", flags: flags + ["Limits"], error: "limit-exceeded", d)

        // §3.3 ranges.
        d = base
        d.ranges[0].first = 0
        invalid("range-first-zero", "A range starting at sequence number 0", flags: flags, error: "bad-range", d)
        d = base
        d.ranges[0].first = 2
        d.ranges[0].last = 1
        invalid("range-last-before-first", "A range from #2 to #1", flags: flags, error: "bad-range", d)
        d = base
        d.ranges[0].previous = Wire.sha256([1, 2, 3])
        invalid(
            "range-not-from-genesis",
            "A range starting at #1 whose `previous` is not the origin's genesis hash (the chain and "
                + "attestation follow that wrong hash)", flags: flags + ["Chain"], error: "bad-range", d)
        d = base
        d.ranges[0].last = Int64.min
        invalid("range-last-too-large", "A range ending at sequence number 2^63", flags: flags, error: "bad-range", d)
        d = relay()
        d.ranges.swapAt(0, 1)
        invalid(
            "ranges-not-ascending",
            "Two ranges not in ascending order of replica id (attestations follow the same order)",
            flags: flags + ["Canonical", "Relay"], error: "bad-range", d)
        d = base
        d.ranges.append(d.ranges[0])
        invalid("range-listed-twice", "Alice's range appears twice", flags: flags, error: "bad-range", d)
        d = base
        d.editHeader = { h in
            h.replaceUnique(Wire.varint(1) + w.alice.publicKey, with: Wire.varint(4097) + w.alice.publicKey)
        }
        invalid("too-many-ranges", "A range count of 4097", flags: flags + ["Limits"], error: "limit-exceeded", d)

        // §3.3 the end of the header.
        d = base
        d.headerTail = [1, 1, 0]
        invalid(
            "header-attribute",
            "A header attribute with odd id 1: the header attributes are the schema lineage (id 2), a watermark's row digest "
                + "(id 3) and a snapshot's generation floors (id 4)",
            flags: flags + ["Extensibility"],
            error: "unknown-attribute", d)
        addRowDigestDefects(base)
        d = base
        d.headerTail = [0, 0]
        invalid(
            "header-trailing-bytes", "A zero byte after the header's attribute count", flags: flags,
            error: "bad-header", d)
        d = base
        d.headerTail = [1, 2] + Wire.varint(16_777_217)
        invalid(
            "header-attribute-too-long",
            "A header attribute whose length is 16 MiB + 1: refused for its length, before its data is read",
            flags: flags + ["Limits"], error: "limit-exceeded", d)
        d = base
        d.headerTail = []
        invalid(
            "header-ends-early", "The HEADER payload ends before its attribute count", flags: flags + ["Truncated"],
            error: "bad-header", d)
    }
}

extension Catalog {
    /// The row digest attribute (Protocol/exchange.md §8.3) where it does not belong or breaks its rules.
    mutating func addRowDigestDefects(_ base: Draft) {
        let flags = ["Header", "Resigned", "Watermark"]
        var d = base
        d.rowDigest = [("notes", 1, 7)]
        invalid(
            "row-digest-outside-watermark",
            "A changes bundle whose header carries a row digest: only a watermark has one",
            flags: flags, error: "bad-header", d)
        let everything = Token([(w.alice, 4), (w.bob, 3), (w.carol, 1)])
        let watermark = Draft(
            world: w, sender: w.bob, kind: 3, created: World.time(81), since: everything, through: everything,
            tables: [World.notes, World.tags], transactions: [])
        d = watermark
        d.rowDigest = [("tags", 2, 9), ("notes", 3, 5)]
        invalid(
            "row-digest-tables-unsorted", "A watermark's row digest lists `tags` before `notes`", flags: flags,
            error: "bad-header", d)
        d = watermark
        d.rowDigest = [("notes", 0, 0)]
        invalid(
            "row-digest-empty-entry", "A watermark's row digest has an entry of 0 rows summing to 0", flags: flags,
            error: "bad-header", d)
    }
}
