import Crypto
import Foundation
import TidemarkCore

/// Runs TidemarkCore's decoder on a vector. The generator calls this in a child process
/// (`tidemark-vectors check FILE`) so that a decoder crash is reported, not fatal.
enum SelfCheck {
    /// Decodes and verifies `bytes`; prints `valid`, the decoded JSON and the re-encoding result,
    /// or `invalid <rule> <layer>: <error>`, the rule being bundle.md §7's name.
    static func run(_ bytes: [UInt8], keys: [Identity], reencode shouldReencode: Bool) {
        do {
            let decoder = try BundleDecoder(BufferSource(bytes))
            var transactions: [JSON] = []
            var decoded: [(History.TransactionHeader, [History.Change])] = []
            var rowStates: [JSON] = []
            if decoder.header.kind == .snapshot {
                while let state = try decoder.nextRowState() { rowStates.append(json(state)) }
            }
            while decoder.header.kind != .snapshot, let head = try decoder.nextTransaction() {
                var changes: [History.Change] = []
                while let change = try decoder.nextChange() { changes.append(change) }
                decoded.append((head, changes))
                let schema = head.schemaPosition == 0 ? nil : decoder.header.lineage[head.schemaPosition - 1].id
                transactions.append(json(head, changes, chainHash: decoder.lastCompleted!.chainHash, schema: schema))
            }
            let verified = try decoder.finish()
            print("valid")
            print(
                json(verified, transactions: transactions, rowStates: rowStates, signature: Array(bytes.suffix(64)))
                    .rendered())
            print("reencoded: " + (shouldReencode ? reencode(bytes, verified, decoded, keys: keys) : "not asked"))
        } catch let error as BundleError {
            print("invalid \(error.rule.rawValue) \(layer(error)): \(error)")
        } catch {
            print("invalid NOT-A-BUNDLE-ERROR: \(error)")
        }
    }

    static func layer(_ error: BundleError) -> String {
        switch error {
        case .framing: return "framing"
        case .record: return "record"
        case .verification: return "verification"
        }
    }

    /// Whether BundleEncoder, given the decoded content, writes the same bytes before the signature.
    static func reencode(
        _ bytes: [UInt8], _ verified: VerifiedBundle, _ decoded: [(History.TransactionHeader, [History.Change])],
        keys: [Identity]
    ) -> String {
        guard let signer = keys.first(where: { $0.publicKey == verified.senderKey }) else { return "no key" }
        do {
            var encoder = try BundleEncoder(sink: BufferSink(), signingKey: signer.key, header: verified.header)
            for (head, changes) in decoded {
                try encoder.beginTransaction(
                    origin: head.origin, sequence: head.sequence, timestamp: head.timestamp, author: head.author,
                    contextName: head.contextName,
                    processID: head.processID, changeCount: changes.count)
                for change in changes { try encoder.add(change) }
            }
            let attestations = verified.attestations
            let out = try encoder.finish { origin, _, _ in attestations.first { $0.origin == origin }! }.bytes
            let a = Array(bytes.dropLast(64))
            let b = Array(out.dropLast(64))
            if a == b { return "identical" }
            let at = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
            return "differs at byte \(at) (\(a.count) vs \(b.count) bytes before the signature)"
        } catch {
            return "failed: \(error)"
        }
    }

    // MARK: - JSON of a decoded bundle (same shape as Expected.swift)

    /// Long by design: the JSON form of a decoded bundle, field by field as §10.2 lists them.
    static func json(_ v: VerifiedBundle, transactions: [JSON], rowStates: [JSON], signature: [UInt8]) -> JSON {
        let h = v.header
        var pairs: [(String, JSON)] = [
            ("kind", .string(["", "changes", "snapshot", "watermark"][Int(h.kind.rawValue)])),
            (
                "sender",
                .object([
                    ("name", .string(h.senderName)), ("publicKey", .hex(v.senderKey)),
                    ("replica", .hex(v.sender.bytes)),
                ])
            ),
            ("created", .integer(h.created.packed)),
            ("since", token(h.since)),
            ("through", token(h.through)),
            (
                "tables",
                .array(
                    h.tables.map {
                        .object([
                            ("name", .string($0.name)), ("keyColumns", .array($0.keyColumns.map(JSON.string))),
                            ("columns", .array($0.columns.map(JSON.string))),
                        ])
                    })
            ),
            (
                "ranges",
                .array(
                    h.ranges.map {
                        .object([
                            ("origin", .hex($0.origin.bytes)), ("publicKey", .hex($0.publicKey)),
                            ("first", .integer($0.first)),
                            ("last", .integer($0.last)), ("previous", .hex($0.previous)),
                        ])
                    })
            ),
            ("transactions", .array(transactions)),
            (
                "attestations",
                .array(
                    v.attestations.map {
                        .object([
                            ("origin", .hex($0.origin.bytes)), ("sequence", .integer($0.sequence)),
                            ("head", .hex($0.head)),
                            ("signature", .hex($0.signature)),
                        ])
                    })
            ),
            ("digest", .hex(v.digest)),
            ("signature", .hex(signature)),
        ]
        if h.kind == .snapshot { pairs.insert(("rowStates", .array(rowStates)), at: 8) }
        if !h.floors.isEmpty {
            let entries = h.floors.map { JSON.object([("name", .string($0.table)), ("floor", .integer($0.floor))]) }
            pairs.insert(("generationFloors", .array(entries)), at: 7)
        }
        if !h.lineage.isEmpty {
            let lineage = h.lineage.map { v in
                JSON.object([
                    ("position", .integer(Int64(v.position))), ("id", .hex(v.id)), ("change", .hex(v.change.encoded())),
                ])
            }
            pairs.insert(("schemaLineage", .array(lineage)), at: 7)
        }
        if let digest = h.digest {
            let entries = digest.tables.map { e in
                JSON.object([
                    ("name", .string(e.name)), ("rows", .integer(Int64(e.rows))),
                    ("sum", .hex(Wire.be64(e.sum))),
                ])
            }
            pairs.insert(("rowDigest", .array(entries)), at: 7)
        }
        return .object(pairs)
    }

    static func json(_ r: RowState) -> JSON {
        .object([
            ("table", .string(r.table)), ("generation", .integer(r.generation)),
            ("key", .array(r.key.map { .array([.string($0.name), .value(value($0.value))]) })),
            (
                "columns",
                .array(
                    r.cells.map { c in
                        let clock: JSON =
                            c.clock.map {
                                .object([
                                    ("timestamp", .integer($0.timestamp.packed)), ("origin", .hex($0.origin.bytes)),
                                ])
                            }
                            ?? .null
                        return .array([.string(c.name), .value(value(c.value)), clock])
                    })
            ),
        ])
    }

    static func token(_ t: History.Token) -> JSON {
        .object(t.sequences.keys.sorted().map { (Wire.hex($0.bytes), .integer(t[$0])) })
    }

    static func json(
        _ head: History.TransactionHeader, _ changes: [History.Change], chainHash: [UInt8], schema: [UInt8]?
    ) -> JSON {
        .object([
            ("origin", .hex(head.origin.bytes)),
            ("sequence", .integer(head.sequence)),
            ("timestamp", .integer(head.timestamp.packed)),
            ("author", .optional(head.author)),
            ("contextName", .optional(head.contextName)),
            ("processID", head.processID.map { .integer(Int64($0)) } ?? .null),
            (
                "changes",
                .array(
                    changes.map { c in
                        let columns: [History.Column]
                        switch c.type {
                        case .insert: columns = Array(c.values.dropFirst(c.key.count))
                        case .update: columns = c.values
                        case .delete: columns = Array((c.tombstone ?? []).dropFirst(c.key.count))
                        }
                        return .object([
                            ("type", .string(c.type.rawValue)), ("generation", .integer(c.generation)),
                            ("table", .string(c.table)),
                            ("key", .array(c.key.map { .array([.string($0.name), .value(value($0.value))]) })),
                            ("columns", .array(columns.map { .array([.string($0.name), .value(value($0.value))]) })),
                        ])
                    })
            ),
            ("schemaVersion", schema.map(JSON.hex) ?? .null),
            ("chainHash", .hex(chainHash)),
        ])
    }

    static func value(_ v: SQLValue) -> Value {
        switch v {
        case .null: return .null
        case .integer(let i): return .integer(i)
        case .real(let d): return .real(d)
        case .text(let s): return .text(s)
        case .blob(let b): return .blob(b)
        }
    }
}
