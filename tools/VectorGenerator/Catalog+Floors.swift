/// §3.3 attribute 4: a snapshot's generation floors (Protocol/pruning.md §6.3), alone and beside a
/// schema lineage. The invalid ones are re-signed, so only the named header check refuses them.
extension Catalog {
    mutating func addGenerationFloors() {
        let flags = ["Header", "Snapshot", "Resigned"]
        var base = snapshot()
        base.floors = [("notes", 6), ("tags", 2)]
        valid(
            "snapshot-generation-floors",
            "A snapshot whose sender dropped tombstones: floor 6 for notes, 2 for tags (attribute 4)",
            flags: ["Snapshot", "Header"], base)
        var d = base
        // The header lists the tables as the lineage's last version names them (schema.md §4).
        d.schemaChanges = [Self.addColor]
        d.tables[0] = World.notesWithColor
        valid(
            "snapshot-lineage-and-floors",
            "A snapshot with two header attributes in ascending order of id: the schema lineage (2), then the floors (4)",
            flags: ["Snapshot", "Header", "Schema"], d)
        d.attributesReversed = true
        invalid(
            "header-attributes-descending", "A snapshot's generation floors (id 4) before its schema lineage (id 2)",
            flags: flags + ["Canonical"], error: "bad-header", d)
        d.attributesReversed = false
        d.rowDigest = [("notes", 1, 7)]
        invalid(
            "header-three-attributes", "A snapshot with a lineage, a row digest and floors: at most two attributes",
            flags: flags + ["Limits"], error: "unknown-attribute", d)

        d = base
        d.floors = [("tags", 2), ("notes", 6)]
        invalid(
            "generation-floors-unsorted", "A snapshot's floors list `tags` before `notes`", flags: flags,
            error: "bad-header", d)
        d.floors = [("notes", 5)]
        invalid("generation-floors-odd", "A floor of 5: floors are even", flags: flags, error: "bad-header", d)
        d.floors = [("notes", 0)]
        invalid(
            "generation-floors-zero", "A floor of 0: a table without a floor has no entry", flags: flags,
            error: "bad-header", d)
        d.floors = []
        invalid(
            "generation-floors-empty", "A generation floors attribute with no entry", flags: flags,
            error: "bad-header", d)
        d.floors = [("", 2)]
        invalid(
            "generation-floors-empty-name", "A floor for a table with an empty name", flags: flags,
            error: "bad-header", d)

        d = alice(1...1, tables: [World.notes])
        d.floors = [("notes", 2)]
        invalid(
            "generation-floors-outside-snapshot",
            "A changes bundle whose header carries generation floors: only a snapshot has them",
            flags: ["Header", "Resigned"], error: "bad-header", d)
    }
}
