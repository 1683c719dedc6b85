import Crypto
import Foundation
import TidemarkCore

/// Keys, a table and helpers to write and read bundles.
struct CodecFixture {
    let keys: [Curve25519.Signing.PrivateKey]
    let sender: Curve25519.Signing.PrivateKey
    static let table = "t"
    static let columns = ["a", "b", "c", "d", "e", "k"]

    init(origins: Int) {
        keys = (0..<origins).map { i in
            try! Curve25519.Signing.PrivateKey(
                rawRepresentation: Array(SHA256.hash(data: Array("codec-test-\(i)".utf8))))
        }
        sender = keys[0]
    }

    func id(_ origin: Int) -> Replica.ID { Replica.ID(publicKey: Array(keys[origin].publicKey.rawRepresentation)) }

    /// A transaction's fields as `History.TransactionHeader` carries them.
    struct Head: Equatable {
        var origin: Replica.ID
        var sequence: Int64
        var timestamp: HLCTimestamp
        var author: String?
        var contextName: String?
        var processID: Int32?
        var changeCount: Int

        init(
            origin: Replica.ID, sequence: Int64, timestamp: HLCTimestamp, author: String?, contextName: String?,
            processID: Int32?,
            changeCount: Int
        ) {
            self.origin = origin
            self.sequence = sequence
            self.timestamp = timestamp
            self.author = author
            self.contextName = contextName
            self.processID = processID
            self.changeCount = changeCount
        }

        init(_ h: History.TransactionHeader) {
            self.init(
                origin: h.origin, sequence: h.sequence, timestamp: h.timestamp, author: h.author,
                contextName: h.contextName,
                processID: h.processID, changeCount: h.changeCount)
        }
    }

    struct Transaction {
        var head: Head
        var changes: [History.Change]
    }

    func transaction(origin: Int, sequence: Int64, changes: [History.Change]) -> Transaction {
        Transaction(
            head: Head(
                origin: id(origin), sequence: sequence,
                timestamp: HLCTimestamp(milliseconds: 1_763_683_200_000 + sequence * 10, counter: 3),
                author: sequence % 2 == 0 ? nil : "author \(sequence)", contextName: sequence % 3 == 0 ? "ctx" : nil,
                processID: sequence % 4 == 0 ? nil : Int32(truncatingIfNeeded: sequence * 7919 - 100_000),
                changeCount: changes.count),
            changes: changes)
    }

    /// Transactions of every origin, interleaved, each origin numbered from 1.
    func randomTransactions(count: Int, using rng: inout SplitMix64) -> [Transaction] {
        var next = [Int64](repeating: 1, count: keys.count)
        return (0..<count).map { _ in
            let origin = Int.random(in: 0..<keys.count, using: &rng)
            defer { next[origin] += 1 }
            return transaction(
                origin: origin, sequence: next[origin],
                changes: (0..<Int.random(in: 0...5, using: &rng)).map { _ in randomChange(using: &rng) })
        }
    }

    func randomChange(using rng: inout SplitMix64) -> History.Change {
        let key = [History.Column("k", randomValue(using: &rng))]
        let names = Self.columns.filter { $0 != "k" && Bool.random(using: &rng) }
        let columns = names.map { History.Column($0, randomValue(using: &rng)) }
        let life = Int64.random(in: 0...1000, using: &rng)
        switch Int.random(in: 0..<3, using: &rng) {
        case 0:
            return History.Change(
                type: .insert, table: Self.table, key: key, values: key + columns, generation: 2 * life + 1)
        case 1:
            let updated = columns.isEmpty ? [History.Column("a", .null)] : columns
            return History.Change(type: .update, table: Self.table, key: key, values: updated, generation: 2 * life + 1)
        default:
            return History.Change(
                type: .delete, table: Self.table, key: key, values: [], tombstone: key + columns,
                generation: 2 * life + 2)
        }
    }

    func randomValue(using rng: inout SplitMix64) -> SQLValue {
        switch Int.random(in: 0..<12, using: &rng) {
        case 0: return .null
        case 1: return .integer([Int64.min, .max, 0, -1, 1][Int.random(in: 0..<5, using: &rng)])
        case 2: return .integer(Int64(bitPattern: rng.next()))
        case 3:
            return .real(
                [0.0, -0.0, .nan, .infinity, -.infinity, .leastNonzeroMagnitude][Int.random(in: 0..<6, using: &rng)])
        case 4: return .real(Double(bitPattern: rng.next()))
        case 5: return .text("")
        case 6:
            let alphabet = "aé世🌊\u{301}\u{0}\n\""
            return .text(
                String((0..<Int.random(in: 1...20, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }))
        case 7: return .blob([])
        case 8:
            return .blob((0..<Int.random(in: 1...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 9: return .text(String(repeating: "x", count: Int.random(in: 100...3000, using: &rng)))
        default: return .integer(Int64.random(in: -300...300, using: &rng))
        }
    }

    func header(for transactions: [Transaction], extraColumns: [String], extraTables: [String] = []) -> BundleHeader {
        var ranges: [Int: (Int64, Int64)] = [:]
        for t in transactions {
            let i = keys.firstIndex { Replica.ID(publicKey: Array($0.publicKey.rawRepresentation)) == t.head.origin }!
            ranges[i] = (min(ranges[i]?.0 ?? t.head.sequence, t.head.sequence), max(ranges[i]?.1 ?? 0, t.head.sequence))
        }
        var through: [Replica.ID: Int64] = [:]
        for (i, r) in ranges { through[id(i)] = r.1 }
        return BundleHeader(
            kind: .changes, senderName: "codec test",
            created: HLCTimestamp(milliseconds: 1_763_683_300_000, counter: 0), since: .zero,
            through: History.Token(sequences: through),
            tables: [
                BundleHeader.TableSchema(name: Self.table, keyColumns: ["k"], columns: Self.columns + extraColumns)
            ] + extraTables.map { BundleHeader.TableSchema(name: $0, keyColumns: ["k"], columns: Self.columns) },
            ranges: ranges.map { i, r in
                BundleHeader.OriginRange(
                    publicKey: Array(keys[i].publicKey.rawRepresentation), first: r.0, last: r.1,
                    previous: Chain.genesis(id(i)))
            })
    }

    func encode(_ transactions: [Transaction], extraColumns: [String] = [], extraTables: [String] = []) throws
        -> [UInt8]
    {
        var encoder = try BundleEncoder(
            sink: BufferSink(), signingKey: sender,
            header: header(for: transactions, extraColumns: extraColumns, extraTables: extraTables))
        for t in transactions {
            let h = t.head
            try encoder.beginTransaction(
                origin: h.origin, sequence: h.sequence, timestamp: h.timestamp, author: h.author,
                contextName: h.contextName,
                processID: h.processID, changeCount: t.changes.count)
            for change in t.changes { try encoder.add(change) }
        }
        let keys = self.keys
        return try encoder.finish { origin, sequence, head in
            let key = keys.first { Replica.ID(publicKey: Array($0.publicKey.rawRepresentation)) == origin }!
            return try Attestation.sign(origin: key, sequence: sequence, head: head)
        }.bytes
    }

    static func decode(_ file: [UInt8]) throws -> [Transaction] {
        let decoder = try BundleDecoder(BufferSource(file))
        var out: [Transaction] = []
        while let head = try decoder.nextTransaction() {
            var changes: [History.Change] = []
            while let change = try decoder.nextChange() { changes.append(change) }
            out.append(Transaction(head: Head(head), changes: changes))
        }
        _ = try decoder.finish()
        return out
    }

    /// Nil when decoding refuses `file` with a BundleError; otherwise what happened instead.
    static func refusal(_ file: [UInt8]) -> String? {
        do {
            _ = try decode(file)
            return "accepted"
        } catch is BundleError {
            return nil
        } catch {
            return "threw \(type(of: error)): \(error)"
        }
    }

    /// Two origins, three transactions, every change type: small enough to damage exhaustively.
    func smallBundle() throws -> [UInt8] {
        let key = [History.Column("k", .integer(7))]
        return try encode([
            transaction(
                origin: 0, sequence: 1,
                changes: [
                    History.Change(
                        type: .insert, table: Self.table, key: key, values: key + [History.Column("a", .text("hi"))],
                        generation: 1)
                ]),
            transaction(
                origin: 1, sequence: 1,
                changes: [
                    History.Change(
                        type: .update, table: Self.table, key: key, values: [History.Column("b", .real(-0.0))],
                        generation: 1)
                ]),
            transaction(
                origin: 0, sequence: 2,
                changes: [
                    History.Change(
                        type: .delete, table: Self.table, key: key, values: [],
                        tombstone: key + [History.Column("c", .blob([1]))],
                        generation: 2)
                ]),
        ])
    }

    /// The length of transaction #1 of `aTransactionPrefixCut…` as §4.2 and §4.3 encode it.
    func recordLength(blobSize: Int) -> Int {
        func varint(_ v: UInt64) -> Int {
            var out: [UInt8] = []
            Varint.append(v, to: &out)
            return out.count
        }
        let t = transaction(origin: 0, sequence: 1, changes: [])
        let prefix =
            16 + varint(1) + varint(UInt64(t.head.timestamp.packed)) + 1 + (1 + 8) + 1 + 1
            + varint(UInt64(UInt32(bitPattern: t.head.processID!))) + varint(1)
        // insert, generation 1, "t", 1 key column ("k", INTEGER 1), 1 column ("a", BLOB), no attributes
        let change = 1 + 1 + 2 + 1 + 2 + 2 + 1 + 2 + 1 + varint(UInt64(blobSize)) + blobSize + 1
        return prefix + change + 1
    }
}
