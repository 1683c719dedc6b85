import Foundation

/// Writes Protocol/vectors/: keys, bundles, expected JSON, the manifest and the annotated example.
struct Output {
    let root: URL

    /// Long by design: every file of Protocol/vectors/ written in one place, in the order a reader finds them.
    func write(_ catalog: Catalog, world: World) throws {
        let fm = FileManager.default
        for folder in ["keys", "valid", "invalid"] {
            let url = root.appendingPathComponent(folder)
            try fm.createDirectory(at: url, withIntermediateDirectories: true)
            // Remove what an earlier run wrote, so renamed vectors do not linger.
            for name in try fm.contentsOfDirectory(atPath: url.path)
            where [".tmb", ".json", ".pem"].contains(where: name.hasSuffix) {
                try fm.removeItem(at: url.appendingPathComponent(name))
            }
        }
        try writeKeys(world)
        var groups: [(String, [JSON])] = []
        for (i, v) in catalog.vectors.enumerated() {
            let folder = v.isValid ? "valid" : "invalid"
            let file = "\(folder)/\(v.name).tmb"
            try Data(v.file).write(to: root.appendingPathComponent(file))
            var test: [(String, JSON)] = [
                ("tcId", .integer(Int64(i + 1))), ("comment", .string(v.comment)), ("file", .string(file)),
            ]
            switch v.result {
            case .valid(let expected):
                let json = "\(folder)/\(v.name).json"
                try (expected.rendered() + "\n").write(
                    to: root.appendingPathComponent(json), atomically: false, encoding: .utf8)
                test += [
                    ("result", .string("valid")), ("flags", .array(v.flags.map(JSON.string))),
                    ("expected", .string(json)),
                ]
            case .invalid(let error):
                test += [
                    ("result", .string("invalid")), ("flags", .array(v.flags.map(JSON.string))),
                    ("error", .string(error)),
                ]
            }
            if groups.last?.0 != v.group { groups.append((v.group, [])) }
            groups[groups.count - 1].1.append(.object(test))
        }
        let manifest = JSON.object([
            ("algorithm", .string("tidemark-bundle-v1")),
            ("specification", .string("Protocol/bundle.md")),
            ("numberOfTests", .integer(Int64(catalog.vectors.count))),
            (
                "header",
                .array([
                    .string("Change-bundle vectors for format version 1, written by `swift run tidemark-vectors`."),
                    .string("Paths are relative to this file. Keys are in keys/ (see keys/keys.json)."),
                    .string("A valid bundle must verify and decode to its `expected` JSON (bundle.md §10.2)."),
                    .string("An invalid bundle must be rejected; `error` names the rule of bundle.md §7 it breaks."),
                ])
            ),
            ("notes", .object(Self.flagNotes.map { ($0.0, .string($0.1)) })),
            ("testGroups", .array(groups.map { .object([("type", .string($0.0)), ("tests", .array($0.1))]) })),
        ])
        try (manifest.rendered() + "\n").write(
            to: root.appendingPathComponent("manifest.json"), atomically: false, encoding: .utf8)
        if let example = catalog.vectors.first(where: { $0.name == "example" }) {
            try Dump.annotate(example.file).write(
                to: root.appendingPathComponent("example.annotated.txt"), atomically: false, encoding: .utf8)
        }
    }

    private func writeKeys(_ world: World) throws {
        var entries: [JSON] = []
        for who in world.everyone {
            try who.privatePEM.write(
                to: root.appendingPathComponent("keys/\(who.name).pem"), atomically: false, encoding: .utf8)
            try who.publicPEM.write(
                to: root.appendingPathComponent("keys/\(who.name).pub.pem"), atomically: false, encoding: .utf8)
            entries.append(
                .object([
                    ("name", .string(who.name)), ("privateKey", .string("\(who.name).pem")),
                    ("publicKeyFile", .string("\(who.name).pub.pem")),
                    ("publicKey", .hex(who.publicKey)), ("replica", .hex(who.id)),
                ]))
        }
        try (JSON.array(entries).rendered() + "\n").write(
            to: root.appendingPathComponent("keys/keys.json"), atomically: false, encoding: .utf8)
    }

    static let flagNotes: [(String, String)] = [
        ("Attestation", "The defect is in an origin's attestation (§5.2)."),
        ("Canonical", "A value has one encoding only; this vector uses another (§2, §4)."),
        ("Chain", "The defect breaks an origin's sequence or hash chain (§5.2)."),
        ("Compressed", "Uses compressed frames (§3.2)."),
        ("Compression", "The defect is in a compressed payload (§3.2)."),
        ("Empty", "A bundle without transactions."),
        ("EmptyTransaction", "Includes a transaction with no changes."),
        ("Extensibility", "Exercises attributes (§6.2)."),
        ("FrameSplit", "Records span frame boundaries (§3.2)."),
        ("Framing", "The defect is in the preamble or frame structure (§3.1, §3.2)."),
        ("Header", "The defect is in the header payload (§3.3)."),
        ("Limits", "At or beyond a limit of §3.4."),
        ("Record", "The defect is in a transaction or change record (§4)."),
        ("Relay", "A bundle relayed by a replica that is not the origin; for invalid ones, a hostile relay."),
        (
            "Resigned",
            "The file signature is valid: the defect was made before signing, as a hostile sender or relay would, so only the "
                + "stated check can catch it."
        ),
        (
            "Schema",
            "Carries schema versions: the header's schema lineage and the transactions' schema version attribute (schema.md §4)."
        ),
        ("Signature", "The file signature does not verify (§5.1)."),
        ("Snapshot", "A snapshot bundle (kind 2) of row states (§4.4), or row states where they do not belong."),
        ("Truncated", "Data ends early."),
        ("UTF8", "Exercises UTF-8 validation (§4.1)."),
        ("Uncompressed", "Uses uncompressed TRANSACTIONS frames (§3.2)."),
        ("Values", "Exercises every value encoding (§4.1)."),
        ("Version", "Exercises the version field (§6.1)."),
        ("Watermark", "A watermark bundle (kind 3)."),
        (
            "WeakKey",
            "A key of small order or not canonically encoded, under which anyone can forge a signature that a lenient "
                + "verifier accepts; readers MUST refuse the key (§5.1, §9)."
        ),
    ]
}
