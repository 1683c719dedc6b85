import Crypto
import Foundation

/// A fixed signing identity. The seed is derived from the name, so every run uses the same keys.
struct Identity {
    let name: String
    let key: Curve25519.Signing.PrivateKey

    init(_ name: String) {
        self.name = name
        let seed = Wire.sha256(Array("tidemark-vectors-v1 key \(name)".utf8))
        key = try! Curve25519.Signing.PrivateKey(rawRepresentation: seed)
    }

    var seed: [UInt8] { Array(key.rawRepresentation) }
    var publicKey: [UInt8] { Array(key.publicKey.rawRepresentation) }
    /// The replica id: the first 16 bytes of SHA-256 of the public key.
    var id: [UInt8] { Array(Wire.sha256(publicKey).prefix(16)) }

    func sign(_ message: [UInt8]) -> [UInt8] { Array(try! key.signature(for: message)) }

    /// PKCS#8 (RFC 8410) private key, the form `sync init` writes.
    var privatePEM: String {
        let der: [UInt8] =
            [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20] + seed
        return "-----BEGIN PRIVATE KEY-----\n\(Data(der).base64EncodedString())\n-----END PRIVATE KEY-----\n"
    }

    /// SubjectPublicKeyInfo, the form `openssl pkeyutl -pubin` reads.
    var publicPEM: String {
        let der: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00] + publicKey
        return "-----BEGIN PUBLIC KEY-----\n\(Data(der).base64EncodedString())\n-----END PUBLIC KEY-----\n"
    }
}

/// A SQLite value (§4.1).
enum Value {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

struct Column {
    var name: String
    var value: Value
    init(_ name: String, _ value: Value) {
        self.name = name
        self.value = value
    }
}

/// A change record (§4.3), fields in wire order.
struct Change {
    enum Kind: UInt8 {
        case insert = 1
        case update = 2
        case delete = 3
        var word: String { ["", "insert", "update", "delete"][Int(rawValue)] }
    }
    var kind: Kind
    /// The row's generation (causal length) after the change: odd for inserts and updates, even for deletes.
    var generation: UInt64
    var table: String
    var key: [Column]
    var columns: [Column]
    var attributes: [Attribute] = []

    /// A change of the row's first life (generation 1), or the delete that ends it (generation 2).
    init(kind: Kind, generation: UInt64? = nil, table: String, key: [Column], columns: [Column]) {
        self.kind = kind
        self.generation = generation ?? (kind == .delete ? 2 : 1)
        self.table = table
        self.key = key
        self.columns = columns
    }

    var encoded: [UInt8] {
        var out = [kind.rawValue] + Wire.varint(generation) + Wire.name(table) + Wire.varint(UInt64(key.count))
        for c in key { out += Wire.name(c.name) + Wire.value(c.value) }
        out += Wire.varint(UInt64(columns.count))
        for c in columns { out += Wire.name(c.name) + Wire.value(c.value) }
        return out + Attribute.encode(attributes)
    }
}

/// An attribute (§6.2): an id and opaque bytes.
struct Attribute {
    var id: UInt64
    var data: [UInt8]
    static func encode(_ list: [Attribute]) -> [UInt8] {
        var out = Wire.varint(UInt64(list.count))
        for a in list { out += Wire.varint(a.id) + Wire.bytes(a.data) }
        return out
    }
}

/// A transaction record (§4.2).
struct Transaction {
    var origin: Identity
    var sequence: Int64
    /// The packed HLC timestamp: milliseconds << 16 | counter.
    var timestamp: Int64
    var author: String?
    var contextName: String?
    var processID: Int32?
    var changes: [Change]
    var attributes: [Attribute] = []

    var encoded: [UInt8] {
        var out = origin.id + Wire.varint(UInt64(bitPattern: sequence)) + Wire.varint(UInt64(bitPattern: timestamp))
        out += Wire.optionalName(author) + Wire.optionalName(contextName)
        if let processID { out += [1] + Wire.varint(UInt64(UInt32(bitPattern: processID))) } else { out += [0] }
        out += Wire.varint(UInt64(changes.count))
        for c in changes { out += c.encoded }
        return out + Attribute.encode(attributes)
    }
}

/// A row-state record of a snapshot bundle (§4.4), fields in wire order.
struct RowStateRecord {
    /// One non-key column: its value and, if any, the clock of the write that set it.
    struct Cell {
        var name: String
        var value: Value
        /// The packed HLC timestamp and the writer's replica id; nil is clock-present byte 0.
        var clock: (timestamp: Int64, origin: [UInt8])?
        init(_ name: String, _ value: Value, clock: (timestamp: Int64, origin: [UInt8])?) {
            self.name = name
            self.value = value
            self.clock = clock
        }
    }
    var table: String
    /// The causal length: odd alive, even a tombstone.
    var generation: UInt64
    var key: [Column]
    var cells: [Cell]
    var attributes: [Attribute] = []

    init(table: String, generation: UInt64, key: [Column], cells: [Cell]) {
        self.table = table
        self.generation = generation
        self.key = key
        self.cells = cells
    }

    var encoded: [UInt8] {
        var out = Wire.name(table) + Wire.varint(generation) + Wire.varint(UInt64(key.count))
        for c in key { out += Wire.name(c.name) + Wire.value(c.value) }
        out += Wire.varint(UInt64(cells.count))
        for c in cells {
            out += Wire.name(c.name) + Wire.value(c.value)
            if let clock = c.clock {
                out += [1] + Wire.varint(UInt64(bitPattern: clock.timestamp)) + clock.origin
            } else {
                out += [0]
            }
        }
        return out + Attribute.encode(attributes)
    }
}

/// A table entry of the header (§3.3), lists in wire order.
struct Table {
    var name: String
    var keyColumns: [String]
    var columns: [String]

    var encoded: [UInt8] {
        var out = Wire.name(name) + Wire.varint(UInt64(keyColumns.count))
        for k in keyColumns { out += Wire.name(k) }
        out += Wire.varint(UInt64(columns.count))
        for c in columns { out += Wire.name(c) }
        return out
    }
}

/// A token (§2.3): entries in wire order.
struct Token {
    var entries: [(id: [UInt8], sequence: Int64)]

    static let zero = Token(entries: [])

    /// A canonical token: ascending replica ids, zero entries dropped.
    init(_ pairs: [(Identity, Int64)]) {
        entries = pairs.filter { $0.1 > 0 }.map { ($0.0.id, $0.1) }.sorted { $0.id.lexicographicallyPrecedes($1.id) }
    }

    init(entries: [(id: [UInt8], sequence: Int64)]) { self.entries = entries }
}

/// An origin range of the header (§3.3).
struct OriginRange {
    var publicKey: [UInt8]
    var first: Int64
    var last: Int64
    var previous: [UInt8]
    var origin: [UInt8] { Array(Wire.sha256(publicKey).prefix(16)) }

    var encoded: [UInt8] {
        publicKey + Wire.varint(UInt64(bitPattern: first)) + Wire.varint(UInt64(bitPattern: last)) + previous
    }
}

/// An attestation frame payload (§5.2).
struct AttestationRecord {
    var origin: [UInt8]
    var sequence: Int64
    var head: [UInt8]
    var signature: [UInt8]
    var encoded: [UInt8] { origin + Wire.varint(UInt64(bitPattern: sequence)) + head + signature }
}

/// A frame as written (§3.2): `body` is the payload as stored, compressed form included.
struct Frame {
    var type: UInt8
    var flags: UInt8
    var body: [UInt8]
    var encoded: [UInt8] { Wire.frame(type: type, flags: flags, body: body) }

    static let header: UInt8 = 0x01
    static let transactions: UInt8 = 0x02
    static let attestation: UInt8 = 0x03
    static let signature: UInt8 = 0x7f
}
