/// Canonical encoding of values, names, tokens and records (§4). The encoding is a function of the
/// content alone, so any replica that relays a transaction re-creates exactly its bytes, and the
/// origin's chain hash still matches.
enum RecordEncoding {
    /// §4.1 value tags.
    enum Tag: UInt8 {
        case null = 0
        case integer = 1
        case real = 2
        case text = 3
        case blob = 4
    }

    @inline(__always)
    static func varint(_ v: UInt64, _ out: inout some EncodingOutput) { Varint.append(v, to: &out) }

    /// ZigZag maps signed to unsigned so small magnitudes stay short.
    @inline(__always)
    static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }

    @inline(__always)
    static func unzigzag(_ u: UInt64) -> Int64 { Int64(bitPattern: u >> 1) ^ -Int64(bitPattern: u & 1) }

    static func string(_ s: String, _ out: inout some EncodingOutput) {
        var s = s
        s.withUTF8 { utf8 in
            varint(UInt64(utf8.count), &out)
            out.put(UnsafeRawBufferPointer(utf8))
        }
    }

    static func optionalString(_ s: String?, _ out: inout [UInt8]) {
        guard let s else { return out.append(0) }
        out.append(1)
        string(s, &out)
    }

    static func value(_ v: SQLValue, _ out: inout some EncodingOutput) {
        switch v {
        case .null: out.put(Tag.null.rawValue)
        case .integer(let i): integer(i, &out)
        case .real(let d): real(d, &out)
        case .text(let s):
            out.put(Tag.text.rawValue)
            string(s, &out)
        case .blob(let b): b.withUnsafeBytes { bytes(.blob, $0, &out) }
        }
    }

    static func integer(_ i: Int64, _ out: inout some EncodingOutput) {
        out.put(Tag.integer.rawValue)
        varint(zigzag(i), &out)
    }

    static func real(_ d: Double, _ out: inout some EncodingOutput) {
        out.put(Tag.real.rawValue)
        out.putBigEndian(d.bitPattern)
    }

    /// A TEXT (its UTF-8 bytes) or BLOB value given as bytes.
    static func bytes(_ tag: Tag, _ b: UnsafeRawBufferPointer, _ out: inout some EncodingOutput) {
        out.put(tag.rawValue)
        varint(UInt64(b.count), &out)
        out.put(b)
    }

    static func token(_ t: History.Token, _ out: inout [UInt8]) {
        let ids = t.sequences.keys.sorted()
        varint(UInt64(ids.count), &out)
        for id in ids {
            id.append(to: &out)
            varint(UInt64(t[id]), &out)
        }
    }

    static func uint64BigEndian(_ v: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: v >> UInt64(56 - 8 * $0)) }
    }

    /// §4.2: the transaction prefix, up to and including the change count.
    static func transactionPrefix(
        origin: Replica.ID, sequence: Int64, timestamp: HLCTimestamp, author: String?, contextName: String?,
        processID: Int32?, changeCount: Int, _ out: inout [UInt8]
    ) {
        origin.append(to: &out)
        varint(UInt64(sequence), &out)
        varint(UInt64(bitPattern: timestamp.packed), &out)
        optionalString(author, &out)
        optionalString(contextName, &out)
        if let processID {
            out.append(1)
            varint(UInt64(UInt32(bitPattern: processID)), &out)
        } else {
            out.append(0)
        }
        varint(UInt64(changeCount), &out)
    }

    /// §4.2, §6.2: a transaction's attributes: none under the initial schema, else the schema
    /// version it was written under (Protocol/schema.md §4).
    static func transactionAttributes(schema: [UInt8]?, _ out: inout [UInt8]) {
        guard let schema else { return out.append(0) }
        out.append(1)
        varint(Schema.transactionAttribute, &out)
        varint(UInt64(schema.count), &out)
        out += schema
    }

    /// §4.3: the non-key columns a change carries: an insert's new row, an update's changed
    /// columns, a delete's tombstone (unsorted).
    static func carriedColumns(_ c: History.Change) -> [History.Column] {
        switch c.type {
        case .insert: return c.values.filter { !isKey($0, of: c) }
        case .update: return c.values
        case .delete: return (c.tombstone ?? []).filter { !isKey($0, of: c) }
        }
    }

    /// Whether `column` is one of the key columns of `c`. Keys have a few columns: a scan of them
    /// costs less than building a set once per change.
    static func isKey(_ column: History.Column, of c: History.Change) -> Bool {
        c.key.contains { $0.name == column.name }
    }

    /// §4.3: one change: type, the row's generation, table, key columns in key order, other columns
    /// sorted by name (bytewise UTF-8).
    static func change(_ c: History.Change, _ out: inout [UInt8]) {
        let op: UInt8
        switch c.type {
        case .insert: op = 1
        case .update: op = 2
        case .delete: op = 3
        }
        out.append(op)
        varint(UInt64(c.generation), &out)
        string(c.table, &out)
        varint(UInt64(c.key.count), &out)
        for k in c.key {
            string(k.name, &out)
            value(k.value, &out)
        }
        // The carried columns (`carriedColumns`) come in order of name from history and capture,
        // mostly: those are encoded where they lie, without the array that sorting makes.
        let all = c.type == .delete ? c.tombstone ?? [] : c.values
        let skipsKeys = c.type != .update
        var count = 0
        var ordered = true
        var previous: Int?
        for (index, column) in all.enumerated() where !(skipsKeys && isKey(column, of: c)) {
            if let previous, !all[previous].name.utf8.lexicographicallyPrecedes(column.name.utf8) { ordered = false }
            previous = index
            count += 1
        }
        varint(UInt64(count), &out)
        if ordered {
            for column in all where !(skipsKeys && isKey(column, of: c)) {
                string(column.name, &out)
                value(column.value, &out)
            }
        } else {
            for column in carriedColumns(c).sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }) {
                string(column.name, &out)
                value(column.value, &out)
            }
        }
        out.append(0)  // attribute count
    }
}
