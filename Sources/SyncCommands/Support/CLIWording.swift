import Tidemark

/// The command line's own words for library errors. The library speaks to app developers (types
/// and methods); where a `sync` user acts through a command or a flag instead, the CLI says that.
enum CLIWording {
    /// The `error:` line for `error`.
    static func message(for error: any Error) -> String {
        switch error {
        case StoreError.invalidPreserve(let argument, let reason): return "invalid --preserve '\(argument)': \(reason)"
        case StoreError.invalidAuthorship(let field, _, _):
            return "\(error)".replacingOccurrences(
                of: "invalid \(field) ", with: field == "author" ? "invalid --author " : "invalid --context ")
        case StoreError.unsupportedMigration(let table, _):
            return "\(error)".replacingOccurrences(of: "(Migration.untrack)", with: "(--untrack \(table))")
        default: return words("\(error)")
        }
    }

    /// `text`, a library error's or warning's, with the settings it names said as `sync` flags.
    static func words(_ text: String) -> String {
        librarySettings.reduce(text) { $0.replacingOccurrences(of: $1.library, with: $1.cli) }
    }

    /// How library errors name a setting or a value, and how a `sync` user gives it.
    private static let librarySettings = [
        (library: "ExchangeSettings.allowInsecureHTTP", cli: "--insecure-http"),
        (library: "ExchangeSettings.caFile", cli: "--ca-file"),
        (library: "as a replica's identity line has them", cli: "as `sync identity` prints them"),
        (library: "(Store.migrate)", cli: "(sync migrate)"),
    ]

    /// What to do with a store restored from an older copy of itself.
    static let restoredAdvice =
        "move this store aside and create a new replica with `sync init`, then pull (see README, 'Restoring a store')"

    /// The `hint:` line for `error`, when there is something specific to do.
    static func hint(for error: any Error) -> String? {
        switch error {
        case let error as StoreError: return hint(for: error)
        case let error as ExchangeError: return hint(for: error)
        case History.TokenError.notAToken: return "get one with `sync token`"
        case History.TokenError.malformed: return "copy a whole token as `sync token` prints it (tm1.…)"
        case let error as CLIError: return error.hint
        default: return nil
        }
    }

    private static func hint(for error: StoreError) -> String? {
        switch error {
        case .storeNotFound: return "create one with `sync init --store PATH --replica NAME`"
        case .notInitialized: return "run `sync init --store PATH --replica NAME` to start tracking it"
        case .alreadyInitialized: return "see `sync status` for what the store tracks"
        case .invalidAuthorship: return "give --author and --context a name of 1 to 4096 bytes, or leave them out"
        case .nothingToTrack: return "create a table first (--schema FILE.sql), or name one with --track"
        case .historyTokenExpired:
            return
                "read the history that remains without --since (`sync log`), or run `sync watch` again to follow it from now"
        case .foreignToken: return "use a token printed by `sync token` for this store"
        case .badToken: return "copy a whole token as `sync token` prints it (tm1.…)"
        case .trackedTableChanged(let t, _):
            return
                "restore the table as it was, or adopt the change: `sync migrate --store STORE --untrack \(t)` stops tracking it as it is now (its history stays), and `--track \(t)` in a later migration tracks it again (with the key it had: a table with a new key is tracked under a new name)"
        case .keyFile(let path, _): return "check \(path), or pass the right one with --key FILE"
        case .schemaChangeNeedsMigration:
            return "put the schema change in a file and run `sync migrate --store STORE FILE.sql`"
        case .neverTracked(let t):
            return "`sync migrate --store STORE --track \(t)` tracks it: its writes are recorded from then on"
        case .migrationForks:
            return
                "make the migration that peer made first (`sync status` shows the version its bundles wait for), then this one if it is still needed"
        case .tooManyColumnSlots(let t, _, _):
            return
                "keep the table's columns under the limit; if dropped columns hold the slots, `sync migrate --store STORE --untrack \(t)` "
                + "and then `--track \(t)` in a later migration give it a slot per column it has"
        case .bookkeepingChanged:
            return
                "tidemark_ names are Tidemark's, and no trigger or view may name them: without the capture triggers a table's writes are not recorded; change tracked tables with `sync migrate`"
        default: return error.hint.map(words)
        }
    }

    private static func hint(for error: ExchangeError) -> String? {
        switch error {
        case .unknownSigner(_, _, let key): return "if you trust it: sync peers add NAME \(key)"
        case .unknownPeer: return "`sync peers list` shows the peers this store knows"
        case .unknownOrigin:
            return "add that replica's key with `sync peers add NAME KEY` (ask its owner for `sync identity`)"
        case .restoredFromOlderCopy: return "continuing would reuse sequence numbers; \(restoredAdvice)"
        case .invalidPeer(let reason) where reason.hasPrefix("that is a name and a public key"):
            return "sync peers add NAME KEY, with KEY the second word of what `sync identity` prints on the peer"
        case .invalidPeer(let reason) where reason.contains("public key"):
            return "`sync identity` prints a replica's public key"
        case .encryptedWithoutKey:
            // Not "decrypt it with age first" for import: a decrypted copy is refused as a downgrade.
            return
                "pass --key with the key file of a replica it was encrypted for (STORE.key beside its store); "
                + "`sync inspect` also reads a copy decrypted with `age -d -i IDENTITY` (`sync identity --age-identity`)"
        case .downgraded:
            return "a member's file was decrypted and put back in clear; ask that member to push again (sync push)"
        case .remoteFailed(_, .untrustedCertificate):
            return
                "if you trust this server, pass the certificate of the authority that signed its certificate with --ca-file FILE"
        case .badLocation(_, let reason) where reason.contains("allowInsecureHTTP"): return nil
        default: return error.hint.map(words)
        }
    }
}
