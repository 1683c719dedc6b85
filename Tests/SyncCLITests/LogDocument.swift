import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// `sync log --json` read back with `JSONSerialization`, into values the tests compare exactly.
struct LoggedTransaction: Equatable {
    var token: String
    var replica: String
    var seq: Int64
    var timestamp: String
    var hlc: Int64
    var author: String?
    var context: String?
    var pid: Int64?
    var changes: [LoggedChange]
}

/// One change of a logged transaction; `values`, `columns` and `tombstone` are nil when absent.
struct LoggedChange: Equatable, CustomStringConvertible {
    var type: String
    var table: String
    var key: [String: SQLValue]
    var values: [String: SQLValue]? = nil
    var columns: [String]? = nil
    var tombstone: [String: SQLValue]? = nil

    var description: String {
        "\(type) \(table) key=\(key) values=\(values.map { "\($0)" } ?? "-") columns=\(columns ?? []) tombstone=\(tombstone.map { "\($0)" } ?? "-")"
    }
}

enum LogDocument {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses the whole standard output of `sync log --json`.
    static func parse(_ stdout: String) throws -> [LoggedTransaction] {
        guard let array = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [[String: Any]] else {
            throw Invalid(description: "not a JSON array of objects: \(stdout)")
        }
        return try array.map(transaction)
    }

    static func transaction(_ object: [String: Any]) throws -> LoggedTransaction {
        func string(_ key: String) throws -> String {
            guard let value = object[key] as? String else {
                throw Invalid(description: "\(key) is not a string in \(object)")
            }
            return value
        }
        func integer(_ key: String) throws -> Int64 {
            guard case .integer(let value) = try sqlValue(object[key] as Any) else {
                throw Invalid(description: "\(key) is not an integer in \(object)")
            }
            return value
        }
        func optionalString(_ key: String) throws -> String? {
            if object[key] is NSNull { return nil }
            return try string(key)
        }
        guard let changes = object["changes"] as? [[String: Any]] else {
            throw Invalid(description: "no changes array in \(object)")
        }
        let documented: Set = ["token", "replica", "seq", "timestamp", "hlc", "author", "context", "pid", "changes"]
        guard documented.isSubset(of: object.keys) else {
            throw Invalid(description: "transaction keys \(object.keys.sorted())")
        }
        return LoggedTransaction(
            token: try string("token"), replica: try string("replica"), seq: try integer("seq"),
            timestamp: try string("timestamp"),
            hlc: try integer("hlc"), author: try optionalString("author"), context: try optionalString("context"),
            pid: object["pid"] is NSNull ? nil : try integer("pid"), changes: try changes.map(change))
    }

    static func change(_ object: [String: Any]) throws -> LoggedChange {
        func columns(_ key: String) throws -> [String: SQLValue]? {
            guard let value = object[key] else { return nil }
            guard let dictionary = value as? [String: Any] else {
                throw Invalid(description: "\(key) is not an object in \(object)")
            }
            return try dictionary.mapValues(sqlValue)
        }
        guard let type = object["type"] as? String, let table = object["table"] as? String, let key = try columns("key")
        else {
            throw Invalid(description: "change without type, table or key: \(object)")
        }
        var names: [String]?
        if let value = object["columns"] {
            guard let list = value as? [String] else {
                throw Invalid(description: "columns is not a list of strings in \(object)")
            }
            names = list
        }
        return LoggedChange(
            type: type, table: table, key: key, values: try columns("values"), columns: names,
            tombstone: try columns("tombstone"))
    }

    /// The value a JSON fragment of `log --json` stands for, storage class included: a number
    /// written with a fraction or exponent is REAL, one without is INTEGER.
    static func sqlValue(_ json: Any) throws -> SQLValue {
        switch json {
        case is NSNull: return .null
        case let text as String: return .text(text)
        case let object as [String: Any]:
            if object.count == 1, let base64 = object["base64"] as? String, let data = Data(base64Encoded: base64) {
                return .blob(Array(data))
            }
            if object.count == 2, object["real"] as? String == "nan", let bits = object["bits"] as? String,
                bits.count == 16, let pattern = UInt64(bits, radix: 16)
            {
                return .real(Double(bitPattern: pattern))
            }
            if object.count == 1, let real = object["real"] as? String {
                switch real {
                case "Infinity": return .real(.infinity)
                case "-Infinity": return .real(-.infinity)
                default: if let value = Double(real) { return .real(value) }
                }
            }
            throw Invalid(description: "unknown value object \(object)")
        case let number as NSNumber:
            // JSONSerialization keeps the literal's kind in objCType ('d' for a fraction or exponent);
            // NSDecimalNumber is its form for integers it does not fit in a machine word.
            if let decimal = number as? NSDecimalNumber, !decimal.stringValue.contains(where: { ".eE".contains($0) }) {
                guard let value = Int64(decimal.stringValue) else {
                    throw Invalid(description: "integer out of range \(decimal)")
                }
                return .integer(value)
            }
            let kind = String(cString: number.objCType)
            if kind == "d" || kind == "f" { return .real(number.doubleValue) }
            return .integer(number.int64Value)
        default:
            throw Invalid(description: "unexpected JSON value \(json)")
        }
    }
}

/// A store made by `sync init` in its own temporary directory.
struct CLIStore {
    static let schema = """
        CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, price REAL, photo BLOB, note);
        CREATE TABLE tags(item TEXT NOT NULL, tag TEXT NOT NULL, weight, PRIMARY KEY (item, tag)) WITHOUT ROWID;
        """

    let directory: TemporaryDirectory
    let path: String

    /// Runs `sync init --store PATH --replica NAME --schema schema.sql EXTRA…` and requires success.
    init(replica: String = "laptop", schema: String = CLIStore.schema, extra: [String] = ["--preserve", "items.name"])
        async throws
    {
        directory = try TemporaryDirectory("tidemark-cli")
        path = directory.file("store.db")
        let schemaFile = directory.file("schema.sql")
        try schema.write(toFile: schemaFile, atomically: false, encoding: .utf8)
        let result = try await SyncProcess.run(
            ["init", "--store", path, "--replica", replica, "--schema", schemaFile] + extra)
        try #require(result.exitCode == 0, "\(result)")
    }

    /// The schema file `init` was given.
    var schemaFile: String { directory.file("schema.sql") }

    /// Runs `sync COMMAND --store PATH ARGUMENTS…`.
    func sync(_ command: String, _ arguments: String...) async throws -> CommandResult {
        try await SyncProcess.run([command, "--store", path] + arguments)
    }

    /// Runs `sync exec` and requires success.
    @discardableResult
    func exec(
        _ sql: String, author: String? = nil, context: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws
        -> CommandResult
    {
        var arguments = ["exec", "--store", path]
        if let author { arguments += ["--author", author] }
        if let context { arguments += ["--context", context] }
        let result = try await SyncProcess.run(arguments + [sql])
        try #require(result.exitCode == 0 && result.stderr.isEmpty, "\(result)", sourceLocation: sourceLocation)
        return result
    }

    /// Runs `sync log --json ARGUMENTS…`, requires success, and parses the output.
    func log(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> [LoggedTransaction]
    {
        let result = try await SyncProcess.run(["log", "--store", path, "--json"] + arguments)
        try #require(result.exitCode == 0 && result.stderr.isEmpty, "\(result)", sourceLocation: sourceLocation)
        return try LogDocument.parse(result.stdout)
    }

    /// `sync token`'s output line.
    func token() async throws -> String {
        let result = try await SyncProcess.run(["token", "--store", path])
        try #require(result.exitCode == 0 && result.stdoutLines.count == 1, "\(result)")
        return result.stdoutLines[0]
    }

    /// `sync status --json`, parsed.
    func status() async throws -> [String: Any] {
        let result = try await SyncProcess.run(["status", "--store", path, "--json"])
        try #require(result.exitCode == 0, "\(result)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// The store's content as `sqlite3 .dump` prints it.
    func dump() async throws -> String { try await SQLiteShell.dump(path) }
}

/// Checks a failed command: a non-zero exit, exactly one `error: ` line containing `message`,
/// nothing on standard output, and no stray lines besides an optional hint.
func expectFailure(
    _ result: CommandResult, _ message: String, hint: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(result.exitCode != 0, "\(result)", sourceLocation: sourceLocation)
    #expect(result.errorLines.count == 1, "\(result)", sourceLocation: sourceLocation)
    #expect(result.stderrLines.first?.hasPrefix("error: ") == true, "\(result)", sourceLocation: sourceLocation)
    #expect(
        result.errorLines.first?.contains(message) == true, "expected '\(message)' in: \(result)",
        sourceLocation: sourceLocation)
    #expect(
        result.stderrLines.allSatisfy { $0.hasPrefix("error: ") || $0.hasPrefix("hint: ") }, "\(result)",
        sourceLocation: sourceLocation)
    #expect(result.hintLines.count <= 1, "\(result)", sourceLocation: sourceLocation)
    if let hint {
        #expect(
            result.hintLines.first?.contains(hint) == true, "expected hint '\(hint)' in: \(result)",
            sourceLocation: sourceLocation)
    }
    #expect(result.stdout.isEmpty, "\(result)", sourceLocation: sourceLocation)
}
