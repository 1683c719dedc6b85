import Foundation

/// Credentials from a netrc file, read as curl and git read them: `machine HOST login NAME
/// password SECRET`, a `default` entry for any other host, `macdef` definitions skipped. The file
/// must be readable by its owner only (mode 0600 or stricter), since it holds passwords.
///
/// Credentials never appear in a message: errors name the file and the host, not what they hold.
struct Netrc {
    struct Credentials: Sendable {
        var login: String
        var password: String

        /// The `Authorization` header value for HTTP Basic authentication.
        var basicAuthorization: String { "Basic " + Data("\(login):\(password)".utf8).base64EncodedString() }
    }

    /// The file to read: `explicit`, else `$NETRC`, else `~/.netrc`; and whether the user named it
    /// (a file the user named must exist).
    static func file(explicit: String?) -> (path: String, named: Bool) {
        if let explicit { return (explicit, true) }
        if let fromEnvironment = ProcessInfo.processInfo.environment["NETRC"], !fromEnvironment.isEmpty {
            return (fromEnvironment, true)
        }
        return (FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".netrc").path, false)
    }

    /// The credentials for `host` from the netrc file `explicit` names (or the default one), or
    /// nil when the file has none for it or, unless named, does not exist.
    static func credentials(for host: String, explicit: String?) throws -> Credentials? {
        let (path, named) = file(explicit: explicit)
        guard FileManager.default.fileExists(atPath: path) else {
            if named { throw ExchangeError.credentials(path: path, reason: "no such file") }
            return nil
        }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        // NETRC=/dev/null, as with curl: no credentials.
        guard attributes?[.type] as? FileAttributeType == .typeRegular else { return nil }
        if let mode = (attributes?[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0 {
            throw ExchangeError.credentials(
                path: path,
                reason: "other users may read it (mode \(String(mode & 0o777, radix: 8))): it must be mode 600")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else { throw ExchangeError.credentials(path: path, reason: "cannot be read") }
        let entries = try parse(text, path: path)
        return entries[host.lowercased()] ?? entries[""]
    }

    /// The entries of a netrc text, by lowercased host; the `default` entry under "".
    static func parse(_ text: String, path: String) throws -> [String: Credentials] {
        var entries: [String: Credentials] = [:]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var tokens: [String] = []
        var index = 0
        // A macdef's body runs to the next empty line and holds no tokens of the file.
        while index < lines.count {
            let words = Self.tokens(of: lines[index])
            index += 1
            if words.first == "macdef" {
                while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).isEmpty { index += 1 }
                continue
            }
            if words.first?.hasPrefix("#") == true { continue }
            tokens += words
        }
        var host: String?
        var login = ""
        var password: String?
        func finish() {
            if let host, let password { entries[host] = entries[host] ?? Credentials(login: login, password: password) }
            host = nil
            login = ""
            password = nil
        }
        var position = 0
        while position < tokens.count {
            let token = tokens[position]
            func value() throws -> String {
                guard position + 1 < tokens.count else {
                    throw ExchangeError.credentials(path: path, reason: "'\(token)' has no value")
                }
                position += 1
                return tokens[position]
            }
            switch token {
            case "machine":
                finish()
                host = try value().lowercased()
            case "default":
                finish()
                host = ""
            case "login": login = try value()
            case "password": password = try value()
            case "account", "port": _ = try value()
            default: break
            }
            position += 1
        }
        finish()
        return entries
    }

    /// The tokens of a line: words between blanks, or a string in double quotes, in which `\"`,
    /// `\\`, `\n`, `\r` and `\t` stand for what they do in C, as curl reads them: a password may
    /// then hold a blank or a quote.
    static func tokens(of line: Substring) -> [String] {
        var tokens: [String] = []
        var current = ""
        var (inToken, quoted, escaped) = (false, false, false)
        for character in line {
            if quoted {
                if escaped {
                    let escapes: [Character: Character] = ["n": "\n", "r": "\r", "t": "\t"]
                    current.append(escapes[character] ?? character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    quoted = false
                } else {
                    current.append(character)
                }
            } else if character == " " || character == "\t" || character == "\r" {
                if inToken { tokens.append(current) }
                (current, inToken) = ("", false)
            } else if character == "\"" && !inToken {
                (quoted, inToken) = (true, true)
            } else {
                current.append(character)
                inToken = true
            }
        }
        if inToken { tokens.append(current) }
        return tokens
    }
}
