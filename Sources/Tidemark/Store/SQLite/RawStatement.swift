import CSQLite
import Foundation
import GRDB
import TidemarkCore

/// A prepared statement driven with SQLite's C API, for the per-change statements of merging,
/// folding and recording history, which run millions of times: binding `SQLValue`s and reading
/// columns directly avoids the argument arrays, rows and dynamic casts of the general-purpose
/// path. Every raw SQLite call of the library lives in this folder.
///
/// A raw statement belongs to one database access: create it inside a `read`/`write` closure and
/// let it go before the closure returns, so it is finalized before its connection can close.
/// Errors are GRDB `DatabaseError`s with SQLite's code and message, as GRDB's own statements throw.
final class RawStatement {
    private let connection: OpaquePointer
    private let statement: OpaquePointer
    let sql: String

    init(_ db: Database, sql: String) throws {
        guard let connection = db.sqliteConnection else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "connection is closed")
        }
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard code == SQLITE_OK, let prepared else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
        }
        self.connection = connection
        self.statement = prepared
        self.sql = sql
    }

    deinit { sqlite3_finalize(statement) }

    /// The rowid of the last row this statement's connection inserted (GRDB's
    /// `Database.lastInsertedRowID` without its check of the calling queue, once per change).
    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(connection) }

    /// Every row `sql` selects with `arguments` bound, each value as stored: text whole, where
    /// GRDB's rows cut it at its first NUL character (Protocol/bundle.md §4.1 lets text hold one).
    /// For the statements that read the values of an app's rows outside the per-change loops.
    static func rows(_ db: Database, sql: String, arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        try RawStatement(db, sql: sql).rows(binding: arguments)
    }

    /// Every row this statement selects with `arguments` bound, as `rows(_:sql:arguments:)`
    /// reads them; the statement can run again after.
    func rows(binding arguments: [SQLValue]) throws -> [[SQLValue]] {
        reset()
        try bind(arguments)
        let count = sqlite3_column_count(statement)
        var rows: [[SQLValue]] = []
        while try step() { rows.append((0..<count).map(value)) }
        return rows
    }

    /// Ends the previous run. Bindings stay: every user binds every parameter before each run
    /// (clearing them cost as much as binding them again).
    func reset() {
        sqlite3_reset(statement)
    }

    /// Binds `value` to the 1-based parameter `index`.
    func bind(_ value: SQLValue, at index: Int32) throws {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(statement, index)
        case .integer(let v): code = sqlite3_bind_int64(statement, index, v)
        case .real(let v): code = sqlite3_bind_double(statement, index, v)
        case .text(var text):
            // Every byte, with its length: text may hold NUL characters (Protocol/bundle.md §4.1),
            // which GRDB's binding would cut at. A native string's storage is lent, not copied.
            code = text.withUTF8 { utf8 in
                // "" must bind an empty text, not NULL: a non-null pointer.
                let base = utf8.baseAddress ?? UnsafePointer(bitPattern: 1)!
                return base.withMemoryRebound(to: CChar.self, capacity: max(utf8.count, 1)) {
                    sqlite3_bind_text64(
                        statement, index, $0, UInt64(utf8.count), tidemark_sqlite_transient(), UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let bytes):
            code = bytes.withUnsafeBytes { buffer in
                // A zero-length blob must stay a blob, not NULL: bind a non-null pointer.
                sqlite3_bind_blob(
                    statement, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
                    tidemark_sqlite_transient())
            }
        }
        try check(code)
    }

    /// Binds an integer, or NULL when nil.
    func bind(_ value: Int64?, at index: Int32) throws {
        try check(value.map { sqlite3_bind_int64(statement, index, $0) } ?? sqlite3_bind_null(statement, index))
    }

    /// Binds `values` to parameters `start`, `start + 1`, …
    func bind(_ values: some Sequence<SQLValue>, from start: Int32 = 1) throws {
        var index = start
        for value in values {
            try bind(value, at: index)
            index += 1
        }
    }

    /// Lays the bytes of every text and blob of `values` out in `bytes`, one after another, with
    /// their lengths in `lengths`; one byte first and one last, so that the buffer has an address
    /// even when every value is empty (a NULL pointer would bind NULL, not an empty text or blob)
    /// and an empty value at the end points inside it.
    private static func layOut(_ values: [SQLValue], in bytes: inout [UInt8], lengths: inout [Int]) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(0)
        lengths.removeAll(keepingCapacity: true)
        for value in values {
            switch value {
            case .text(var text):
                // Native strings are contiguous already; a bridged one is made so, once.
                text.makeContiguousUTF8()
                lengths.append(
                    text.utf8.withContiguousStorageIfAvailable { utf8 in
                        bytes.append(contentsOf: utf8)
                        return utf8.count
                    }!)
            case .blob(let blob):
                bytes.append(contentsOf: blob)
                lengths.append(blob.count)
            case .null, .integer, .real: continue
            }
        }
        bytes.append(0)
    }

    /// Binds `values` to parameters 1, 2, … and runs the statement, which returns no rows, with
    /// the bytes of every text and blob laid out in one buffer and bound where they lie: SQLite
    /// reads them while the statement runs instead of copying each into memory of its own, a
    /// malloc and a copy for each of the hundreds of values of a multi-row insert. Text is taken
    /// whole, as `bind` takes it. The bindings are cleared before it returns, so no
    /// pointer into the buffer outlives the call.
    func execute(binding values: [SQLValue]) throws {
        // Filled as local arrays, taken from the statement and given back: each access to a
        // property of a class is checked for exclusivity at run time.
        var (bytes, lengths) = ([UInt8](), [Int]())
        swap(&bytes, &self.bytes)
        swap(&lengths, &self.lengths)
        defer {
            swap(&bytes, &self.bytes)
            swap(&lengths, &self.lengths)
        }
        Self.layOut(values, in: &bytes, lengths: &lengths)
        try bytes.withUnsafeBufferPointer { buffer in
            defer { sqlite3_clear_bindings(statement) }
            var next = buffer.baseAddress! + 1
            var spans = lengths.makeIterator()
            for (i, value) in values.enumerated() {
                let index = Int32(i + 1)
                let code: Int32
                switch value {
                case .null: code = sqlite3_bind_null(statement, index)
                case .integer(let v): code = sqlite3_bind_int64(statement, index, v)
                case .real(let v): code = sqlite3_bind_double(statement, index, v)
                case .text:
                    let count = spans.next()!
                    // SQLITE_STATIC (nil): the bytes stay where they are until the bindings go.
                    code = next.withMemoryRebound(to: CChar.self, capacity: max(count, 1)) {
                        sqlite3_bind_text64(statement, index, $0, UInt64(count), nil, UInt8(SQLITE_UTF8))
                    }
                    next += count
                case .blob:
                    let count = spans.next()!
                    code = sqlite3_bind_blob64(statement, index, next, UInt64(count), nil)
                    next += count
                }
                try check(code)
            }
            while try step() {}
        }
    }

    /// The bytes and lengths of the texts and blobs `execute(binding:)` binds, kept from run to run.
    private var bytes: [UInt8] = []
    private var lengths: [Int] = []

    /// Advances: true when a row is available, false when the statement is done.
    @discardableResult
    func step() throws -> Bool {
        let code = sqlite3_step(statement)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            // sqlite3_step's code is generic for some errors; the connection's extended code says which.
            let extended = sqlite3_extended_errcode(connection)
            let message = String(cString: sqlite3_errmsg(connection))
            sqlite3_reset(statement)
            throw DatabaseError(resultCode: ResultCode(rawValue: extended), message: message, sql: sql)
        }
    }

    /// Runs a statement that returns no rows.
    func execute() throws {
        while try step() {}
    }

    /// Whether column `index` (0-based) of the current row is NULL.
    func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement, index) == SQLITE_NULL }

    /// Column `index` as an integer (0 for NULL).
    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(statement, index) }

    /// Column `index` as an integer, or nil for NULL.
    func optionalInt64(_ index: Int32) -> Int64? { isNull(index) ? nil : int64(index) }

    /// Calls `body` with the bytes of BLOB column `index`; nil, without calling it, for NULL.
    func withBlob<T>(_ index: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T? {
        guard !isNull(index) else { return nil }
        // The pointer first, then the size (sqlite3_column_blob's documented order).
        let pointer = sqlite3_column_blob(statement, index)
        return try body(UnsafeRawBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, index))))
    }

    /// Column `index` with its storage class.
    func value(_ index: Int32) -> SQLValue { Self.value(of: statement, at: index) }

    /// Column `index` of the current row of a prepared `statement` (one of GRDB's included), with
    /// its storage class: text whole, where GRDB's values cut it at its first NUL character.
    static func value(of statement: OpaquePointer, at index: Int32) -> SQLValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            // Every byte (see `bind`): the pointer first, then the size.
            guard let pointer = sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let pointer = sqlite3_column_blob(statement, index) else { return .blob([]) }
            return .blob([UInt8](UnsafeRawBufferPointer(start: pointer, count: count)))
        default: return .null
        }
    }

    /// Appends column `index`'s value in the bundle encoding (Protocol/bundle.md §4.1) without
    /// making a `SQLValue`: tag, then payload. TEXT is taken as stored, every byte; an INTEGER is
    /// taken as a REAL when `asReal`.
    @discardableResult
    func appendEncodedValue(_ index: Int32, asReal: Bool, to out: inout some CellOutput) -> Bool {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER where asReal: out.appendReal(Double(sqlite3_column_int64(statement, index)))
        case SQLITE_INTEGER: out.appendInteger(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: out.appendReal(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            out.appendText(Self.bytes(sqlite3_column_text(statement, index), sqlite3_column_bytes(statement, index)))
        case SQLITE_BLOB:
            out.appendBlob(Self.bytes(sqlite3_column_blob(statement, index), sqlite3_column_bytes(statement, index)))
        default: return false
        }
        return true
    }

    /// The `count` bytes SQLite gives at `pointer` (which may be NULL for none).
    static func bytes(_ pointer: UnsafeRawPointer?, _ count: Int32) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: count > 0 ? pointer : nil, count: pointer == nil ? 0 : Int(count))
    }

    private func check(_ code: Int32) throws {
        guard code != SQLITE_OK else { return }
        throw DatabaseError(
            resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }
}

extension RawStatement {
    /// The statement in `slot`, reset and ready to bind; prepared from `sql` and stored there on
    /// first use. Every statement kept for reuse goes through here.
    static func reusing(_ slot: inout RawStatement?, _ db: Database, sql: () -> String) throws -> RawStatement {
        if let statement = slot {
            statement.reset()
            return statement
        }
        let statement = try RawStatement(db, sql: sql())
        slot = statement
        return statement
    }
}

/// Bound to one connection inside one database access: never shared between threads.
@available(*, unavailable)
extension RawStatement: Sendable {}
