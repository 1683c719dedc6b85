/// Protocol/schema.md §4: the schema lineage header attribute and the transactions' schema version
/// attribute. The invalid ones are re-signed and re-chained, so only the named check refuses them.
extension Catalog {
    /// Version 1 adds `notes.color`; version 2 starts tracking `links(id, url)`.
    static let addColor = [UInt8](Wire.varint(1) + [2] + Wire.name("notes") + Wire.name("color"))
    static let trackLinks = [UInt8](
        Wire.varint(1) + [1] + Wire.name("links") + Wire.varint(1) + Wire.name("id") + Wire.varint(2) + Wire.name("id")
            + Wire.name("url"))

    /// One version of each later kind: rename table `drafts` to `sketches`, rename column
    /// `archive.note` to `remark`, drop column `archive.size`, untrack `old(id, v)` keyed by `id`.
    static let renameDropUntrack = [UInt8](
        Wire.varint(4) + [3] + Wire.name("drafts") + Wire.name("sketches")
            + [4] + Wire.name("archive") + Wire.name("note") + Wire.name("remark")
            + [5] + Wire.name("archive") + Wire.name("size")
            + [6] + Wire.name("old") + Wire.varint(1) + Wire.name("id") + Wire.varint(2) + Wire.name("id")
            + Wire.name("v"))

    /// Alice's #1-#4: #1-#2 under the initial schema, #3 under version 1, #4 under version 2.
    func migrated() -> Draft {
        var d = alice(
            1...4,
            tables: [
                World.notesWithColor,
                World.tags, World.labels,
            ])
        d.schemaChanges = [Self.addColor, Self.trackLinks]
        d.schemaRuns = [(0, 3, 1), (0, 4, 2)]
        let ids = d.schemaIDs
        d.transactions[2].attributes = [Attribute(id: 2, data: ids[0])]
        d.transactions[3].attributes = [Attribute(id: 2, data: ids[1])]
        return d
    }

    /// Long by design: the catalogue of schema-lineage vectors, one entry each, in the order of the spec.
    mutating func addSchema() {
        valid(
            "schema-lineage",
            "Alice's #1-#4 across two migrations: #3 under version 1 (add column notes.color), #4 under version 2 (track "
                + "table links); the header's lineage and runs place them, each transaction's attribute names its version",
            flags: ["Schema", "Extensibility"], migrated())

        var snapshot = snapshot()
        // The header lists the tables as the lineage's last version names them (schema.md §4).
        snapshot.schemaChanges = [Self.addColor]
        snapshot.tables[0] = World.notesWithColor
        valid(
            "schema-lineage-snapshot", "A snapshot whose row states are written under version 1 of its lineage",
            flags: ["Schema", "Snapshot"], snapshot)

        var renames = migrated()
        renames.schemaChanges[0] = Self.renameDropUntrack
        let renamed = renames.schemaIDs
        renames.transactions[2].attributes = [Attribute(id: 2, data: renamed[0])]
        renames.transactions[3].attributes = [Attribute(id: 2, data: renamed[1])]
        valid(
            "schema-lineage-renames",
            "Version 1 renames a table and a column, drops a column and untracks a table, in canonical "
                + "order (kinds 3, 4, 5, 6); #3 and #4 name the versions that follow from it",
            flags: ["Schema"], renames)

        let flags = ["Schema", "Resigned"]
        var d = migrated()
        d.transactions[3].attributes = []
        invalid(
            "schema-attribute-missing",
            "Transaction #4 carries no schema version, but the runs place it under version 2",
            flags: flags, error: "schema-mismatch", d)
        d = alice(1...2)
        d.transactions[1].attributes = [Attribute(id: 2, data: migrated().schemaIDs[0])]
        invalid(
            "schema-attribute-unexpected",
            "Transaction #2 names a schema version, but the header has no lineage (the initial schema)",
            flags: flags, error: "schema-mismatch", d)
        d = migrated()
        d.transactions[3].attributes = [Attribute(id: 2, data: d.schemaIDs[0])]
        invalid(
            "schema-attribute-wrong-version", "Transaction #4 names version 1, but the runs place it under version 2",
            flags: flags, error: "schema-mismatch", d)
        d = migrated()
        d.transactions[2].attributes = [Attribute(id: 2, data: d.schemaIDs[0]), Attribute(id: 2, data: d.schemaIDs[0])]
        invalid(
            "schema-attribute-repeated", "Transaction #3 names its schema version twice",
            flags: flags, error: "schema-mismatch", d)

        d = migrated()
        d.schemaRuns = [(0, 3, 1), (0, 5, 2)]
        invalid(
            "schema-run-outside-range", "A run starts at #5, past the end of Alice's range", flags: flags,
            error: "bad-header", d)
        d = migrated()
        d.schemaRuns = [(0, 4, 2), (0, 3, 1)]
        invalid(
            "schema-runs-not-ascending", "The runs are not in ascending order of first sequence", flags: flags,
            error: "bad-header", d)
        d = migrated()
        d.schemaChanges = [Self.addColor, Self.trackLinks, Self.addColor]
        invalid(
            "schema-lineage-unneeded-version", "The lineage lists a third version that no transaction is written under",
            flags: flags, error: "bad-header", d)
        d = migrated()
        d.schemaChanges[0] = Wire.varint(1) + [4] + Wire.name("notes") + Wire.name("title") + Wire.name("title")
        invalid(
            "schema-rename-to-itself", "Version 1 renames column notes.title to its own name", flags: flags,
            error: "bad-header", d)
        d = migrated()
        d.schemaChanges[0] = Wire.varint(1) + [7] + Wire.name("notes") + Wire.name("color")
        invalid(
            "schema-unknown-operation", "Version 1's change holds an operation of reserved kind 7", flags: flags,
            error: "bad-header", d)
        d = migrated()
        d.schemaChanges[1] = Wire.varint(2) + Array(Self.addColor.dropFirst()) + Array(Self.trackLinks.dropFirst())
        invalid(
            "schema-operations-not-canonical", "Version 2's change lists its operations out of bytewise order",
            flags: flags, error: "bad-header", d)
    }
}
