import Tidemark

/// Parses a token given on the command line (`--since`), as `sync token` prints it; a bad one is
/// the same error, with the same hint, in every command.
enum TokenArgument {
    static func parse(_ text: String) throws -> History.Token {
        do { return try History.Token(parsing: text) } catch let error as History.TokenError {
            throw StoreError.badToken(error)
        }
    }
}

/// Parses durations such as `90s`, `15m`, `12h`, `30d`.
enum Durations {
    static func parse(_ text: String) throws -> Double {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        guard let unit = text.last, let factor = units[unit], let value = Double(text.dropLast()), value >= 0 else {
            throw CLIError.invalidValue(
                option: "--max-lag", value: text, reason: "use a number and a unit: s, m, h, d or w (e.g. 30d)")
        }
        return value * factor
    }
}
