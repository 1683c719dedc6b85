/// §4 records. Every vector is re-chained, re-attested by the origin and re-signed, so the record
/// defect is the only one.
extension Catalog {
    /// Long by design: the catalogue of record vectors, one entry each, in the order of the spec.
    mutating func addRecords() {
        let base = alice(1...3)
        let flags = ["Record", "Resigned"]
        let first = base.transactions[0]
        let authorAt = Self.authorOffset(first)
        let pidAt = authorAt + Wire.optionalName(first.author).count + Wire.optionalName(first.contextName).count
        let countAt = pidAt + 1 + Wire.varint(UInt64(first.processID!)).count

        /// A draft whose first record gets `edit`.
        func record(_ edit: @escaping (inout [UInt8]) -> Void) -> Draft {
            var d = base
            d.editRecords = { edit(&$0[0]) }
            return d
        }
        /// A draft whose first record has `pattern` replaced.
        func replacing(_ pattern: [UInt8], _ replacement: [UInt8]) -> Draft {
            record { $0.replaceUnique(pattern, with: replacement) }
        }
        /// A draft whose model is changed (the writer encodes it as given).
        func model(_ edit: (inout [Transaction]) -> Void) -> Draft {
            var d = base
            edit(&d.transactions)
            return d
        }
        let title = Self.column("title", .text("hello"))
        let titleName = Wire.name("title")
        let pinned = Self.column("pinned", .integer(0))

        // Structure and truncation.
        var d = base
        d.editRecords = { $0[2].removeLast(5) }
        invalid(
            "record-ends-mid-transaction",
            "The record stream ends 5 bytes before the end of the last transaction; the frames are intact",
            flags: flags + ["Truncated"], error: "record-truncated", d)
        invalid(
            "change-count-too-large",
            "Transaction #1 announces 2 changes and holds 1 (its attribute count, 0, is read as a change type)",
            flags: flags, error: "unknown-change-type", record { $0[countAt] = 2 })
        invalid(
            "change-count-over-limit", "A change count of 2^31", flags: flags + ["Limits"], error: "limit-exceeded",
            record { $0.replaceSubrange(countAt..<countAt + 1, with: Wire.varint(1 << 31)) })
        d = base
        d.editRecords = { $0.append([0x00, 0x01, 0x02]) }
        invalid(
            "record-stream-trailing-bytes", "Three bytes after the last transaction, too few for an origin id",
            flags: flags,
            error: "record-truncated", d)
        d = base
        d.editRecords = { $0.append([UInt8](repeating: 0, count: 40)) }
        invalid(
            "record-stream-garbage",
            "Forty zero bytes after the last transaction, read as a transaction of an unknown origin",
            flags: flags,
            error: "outside-ranges", d)

        // Varints (§2.2).
        invalid(
            "non-minimal-varint", "The INTEGER 0 is encoded 80 00", flags: flags + ["Canonical"], error: "bad-varint",
            replacing(pinned, Wire.name("pinned") + [1, 0x80, 0x00]))
        invalid(
            "non-minimal-varint-length", "The length 5 of a TEXT value is encoded 85 00", flags: flags + ["Canonical"],
            error: "bad-varint",
            replacing(title, titleName + [3, 0x85, 0x00] + Array("hello".utf8)))
        invalid(
            "non-minimal-varint-sequence", "The sequence number 1 is encoded 81 00", flags: flags + ["Canonical"],
            error: "bad-varint",
            record { $0.replaceSubrange(16..<17, with: [0x81, 0x00]) })
        invalid(
            "varint-eleven-bytes", "An 11-byte varint for the INTEGER 0", flags: flags, error: "bad-varint",
            replacing(pinned, Wire.name("pinned") + [1] + [UInt8](repeating: 0xff, count: 10) + [0x01]))
        invalid(
            "varint-overflow", "A 10-byte varint whose last byte is 0x02 (more than 64 bits)", flags: flags,
            error: "bad-varint",
            replacing(pinned, Wire.name("pinned") + [1] + [UInt8](repeating: 0xff, count: 9) + [0x02]))
        invalid(
            "sequence-too-large", "The sequence number 2^63 (does not fit a signed 64-bit integer)", flags: flags,
            error: "number-out-of-range",
            record { $0.replaceSubrange(16..<17, with: Wire.varint(1 << 63)) })

        // Values and names (§4.1).
        invalid(
            "unknown-value-tag", "Value tag 5", flags: flags, error: "unknown-value-tag",
            replacing(title, titleName + [5] + Wire.name("hello")))
        invalid(
            "unknown-value-tag-0x80", "Value tag 0x80", flags: flags, error: "unknown-value-tag",
            replacing(title, titleName + [0x80] + Wire.name("hello")))
        invalid(
            "invalid-utf8-text", "TEXT holding C3 28 (a lead byte without its continuation)", flags: flags + ["UTF8"],
            error: "invalid-utf8",
            replacing(title, titleName + [3, 5, 0x68, 0xc3, 0x28, 0x6c, 0x6f]))
        invalid(
            "overlong-utf8-text", "TEXT holding C0 AF (an overlong encoding of '/')", flags: flags + ["UTF8"],
            error: "invalid-utf8",
            replacing(title, titleName + [3, 5, 0x68, 0xc0, 0xaf, 0x6c, 0x6f]))
        invalid(
            "surrogate-utf8-text", "TEXT holding ED A0 80 (the surrogate U+D800)", flags: flags + ["UTF8"],
            error: "invalid-utf8",
            replacing(title, titleName + [3, 5, 0x68, 0xed, 0xa0, 0x80, 0x6f]))
        invalid(
            "beyond-unicode-utf8-text", "TEXT holding F4 90 80 80 (U+110000, beyond Unicode)", flags: flags + ["UTF8"],
            error: "invalid-utf8",
            replacing(title, titleName + [3, 5, 0x68, 0xf4, 0x90, 0x80, 0x80]))
        invalid(
            "invalid-utf8-column-name", "A column name holding FF", flags: flags + ["UTF8"], error: "invalid-utf8",
            replacing(Wire.name("body"), [4, 0x62, 0xff, 0x64, 0x79]))
        invalid(
            "invalid-utf8-author", "An author holding FF", flags: flags + ["UTF8"], error: "invalid-utf8",
            replacing([1] + Wire.name("app"), [1, 3, 0x61, 0xff, 0x70]))
        invalid(
            "huge-value-length", "A BLOB declaring 2^40 bytes; a reader must refuse it before allocating",
            flags: flags + ["Limits"],
            error: "limit-exceeded", replacing(title, titleName + [4] + Wire.varint(1 << 40) + Array("hello".utf8)))
        invalid(
            "value-length-over-limit", "A TEXT declaring 64 MiB + 1 bytes", flags: flags + ["Limits"],
            error: "limit-exceeded",
            replacing(title, titleName + [3] + Wire.varint(64 * 1024 * 1024 + 1) + Array("hello".utf8)))
        invalid(
            "value-length-past-end", "A BLOB declaring 1000 bytes where fewer remain in the record stream",
            flags: flags + ["Truncated"],
            error: "record-truncated", replacing(title, titleName + [4] + Wire.varint(1000) + Array("hello".utf8)))
        invalid(
            "name-too-long", "A 4097-byte column name", flags: flags + ["Limits"], error: "limit-exceeded",
            replacing(titleName, Wire.name(String(repeating: "t", count: 4097))))
        invalid(
            "empty-column-name", "A column with an empty name", flags: flags, error: "empty-name",
            replacing(Wire.name("pinned"), [0]))
        invalid(
            "bad-presence-byte", "The author presence byte is 2", flags: flags, error: "bad-presence-byte",
            record { $0[authorAt] = 2 })
        invalid(
            "bad-presence-byte-process-id", "The process-id presence byte is 0xFF", flags: flags,
            error: "bad-presence-byte",
            record { $0[pidAt] = 0xff })
        invalid(
            "process-id-too-large", "A process id of 2^32", flags: flags, error: "number-out-of-range",
            replacing([1] + Wire.varint(4242), [1] + Wire.varint(1 << 32)))

        // Changes (§4.3), expressed in the model: the writer encodes whatever order it is given.
        invalid(
            "unknown-change-type", "Change type 0", flags: flags, error: "unknown-change-type",
            replacing(
                [1, 1] + Wire.name("notes") + [1] + Wire.name("id"),
                [0, 1] + Wire.name("notes") + [1] + Wire.name("id")))
        invalid(
            "unknown-change-type-4", "Change type 4", flags: flags, error: "unknown-change-type",
            replacing(
                [1, 1] + Wire.name("notes") + [1] + Wire.name("id"),
                [4, 1] + Wire.name("notes") + [1] + Wire.name("id")))
        invalid(
            "generation-zero", "An insert with generation 0", flags: flags, error: "bad-generation",
            model { $0[0].changes[0].generation = 0 })
        invalid(
            "generation-even-insert", "An insert with generation 2 (even generations belong to deletes)", flags: flags,
            error: "bad-generation", model { $0[0].changes[0].generation = 2 })
        invalid(
            "generation-odd-delete", "A delete with generation 3 (odd generations belong to living rows)", flags: flags,
            error: "bad-generation",
            model {
                $0[1].changes[0] = Change(
                    kind: .delete, generation: 3, table: "notes", key: [Column("id", .integer(1))], columns: [])
            }
        )
        invalid(
            "generation-too-large", "An update with generation 2^63+1 (odd, but beyond a signed 64-bit integer)",
            flags: flags,
            error: "bad-generation", model { $0[1].changes[0].generation = (1 << 63) + 1 })
        invalid(
            "columns-not-sorted", "An insert lists its columns as title, body, pinned", flags: flags + ["Canonical"],
            error: "columns-not-canonical",
            model {
                $0[0].changes[0].columns = [
                    Column("title", .text("hello")), Column("body", .text("First note")), Column("pinned", .integer(0)),
                ]
            })
        invalid(
            "duplicate-column", "An insert lists `pinned` twice", flags: flags + ["Canonical"],
            error: "columns-not-canonical",
            model { $0[0].changes[0].columns.insert(Column("pinned", .integer(1)), at: 1) })
        invalid(
            "key-column-as-value-column", "An insert repeats its key column `id` among the value columns",
            flags: flags + ["Canonical"],
            error: "columns-not-canonical", model { $0[0].changes[0].columns.insert(Column("id", .integer(1)), at: 1) })
        invalid(
            "key-columns-mismatch", "A change of `notes` keyed by `title` where the header says `id`", flags: flags,
            error: "columns-not-canonical",
            model {
                $0[0].changes[0].key = [Column("title", .text("hello"))]
                $0[0].changes[0].columns = [Column("body", .text("First note")), Column("pinned", .integer(0))]
            })
        invalid(
            "key-columns-wrong-order",
            "A change of `tags` gives its key as (name, note) where the header says (note, name)", flags: flags,
            error: "columns-not-canonical", model { $0[2].changes[0].key.reverse() })
        invalid(
            "key-count-zero", "An update with no key columns", flags: flags, error: "bad-column-count",
            model { $0[1].changes[0].key = [] })
        invalid(
            "too-many-columns", "An insert with 32768 value columns, one past the limit", flags: flags + ["Limits"],
            error: "bad-column-count",
            model { $0[0].changes[0].columns = (0..<32768).map { Column("c\($0 + 10000)", .null) } })
        invalid(
            "column-not-in-header", "An insert of `notes` sets `color`, which the header does not list for it",
            flags: flags,
            error: "columns-not-canonical",
            model { $0[0].changes[0].columns.insert(Column("color", .text("red")), at: 1) })
        var missing = base
        missing.tables = [World.notes, World.labels]
        invalid(
            "table-not-in-header", "A change of `tags`, a table the header does not list", flags: flags,
            error: "columns-not-canonical",
            missing)
        invalid(
            "update-without-columns", "An update that sets no column", flags: flags, error: "columns-not-canonical",
            model { $0[1].changes[0].columns = [] })

        // Attributes (§6.2).
        invalid(
            "unknown-even-attribute", "A change carries attribute 2 (even: must be understood)",
            flags: flags + ["Extensibility"],
            error: "unknown-attribute", model { $0[0].changes[0].attributes = [Attribute(id: 2, data: [1])] })
        invalid(
            "unknown-even-attribute-transaction", "A transaction carries attribute 0 (even: must be understood)",
            flags: flags + ["Extensibility"], error: "unknown-attribute",
            model { $0[1].attributes = [Attribute(id: 0, data: [])] })
        var longAttribute = base
        longAttribute.transactions[2].changes[1].attributes = [Attribute(id: 1, data: [7, 7, 7])]
        longAttribute.editRecords = {
            $0[2].replaceUnique([1, 1, 3, 7, 7, 7], with: [1, 1] + Wire.varint(5000) + [7, 7, 7])
        }
        invalid(
            "attribute-length-past-end", "An odd attribute declaring 5000 bytes where 3 remain",
            flags: flags + ["Extensibility", "Truncated"],
            error: "record-truncated", longAttribute)

        // Names are compared as bytes (§4.1), never by Unicode equivalence.
        let precomposed = "caf\u{e9}"
        let decomposed = "cafe\u{301}"
        func menu(table: String, key: String, column: String, header: Table) -> Draft {
            var d = alice(1...1, tables: [header])
            d.transactions[0].changes = [
                Change(
                    kind: .insert, table: table, key: [Column(key, .integer(1))],
                    columns: [Column(column, .text("espresso"))])
            ]
            return d
        }
        invalid(
            "equivalent-table-name",
            "The header lists table \"café\" (U+00E9); the change names \"cafe\u{301}\" (e + U+0301): "
                + "canonically equivalent, different bytes", flags: flags + ["UTF8", "Canonical"],
            error: "columns-not-canonical",
            menu(
                table: decomposed, key: "id", column: "drink",
                header: Table(name: precomposed, keyColumns: ["id"], columns: ["drink", "id"])))
        invalid(
            "equivalent-column-name",
            "The header lists column \"café\" (U+00E9); the change sets \"cafe\u{301}\" (e + U+0301)",
            flags: flags + ["UTF8", "Canonical"], error: "columns-not-canonical",
            menu(
                table: "menu", key: "id", column: decomposed,
                header: Table(name: "menu", keyColumns: ["id"], columns: [precomposed, "id"]))
        )
        invalid(
            "equivalent-key-name",
            "The header's key column is \"café\" (U+00E9); the change's key is \"cafe\u{301}\" (e + U+0301)",
            flags: flags + ["UTF8", "Canonical"], error: "columns-not-canonical",
            menu(
                table: "menu", key: decomposed, column: "drink",
                header: Table(name: "menu", keyColumns: [precomposed], columns: [precomposed, "drink"])))
    }
}
