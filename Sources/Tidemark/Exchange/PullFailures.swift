import Foundation
import TidemarkCore

/// The files a pull could not use, by address, with why. Junk — a damaged file, or one that is
/// not an exchange file — is told apart: it cannot become usable without changing, so a pull
/// reports it once while it is unchanged (Protocol/exchange.md §6.5), where other failures (a
/// missing prerequisite, an untrusted sender, an unreachable server) are reported on every pull
/// until they clear; but for a bundle that waits for what a damaged bundle may hold (of its
/// folder, or of an origin it waits for), which only that folder's owner can clear (`waiting`).
struct PullFailures {
    private(set) var messages: [String: String] = [:]
    private(set) var junk: Set<String> = []
    /// What to do about failures that another pull alone cannot clear (a schema fork), by address.
    private(set) var advice: [String: String] = [:]
    /// The version a file was written under where it forks from the store's lineage, by address.
    private(set) var forks: [String: Schema.Version] = [:]
    /// The files that applied, or held nothing the store lacked.
    private(set) var used: Set<String> = []
    /// The files that wait for transactions this store lacks (missing prerequisites), with the
    /// origins of those transactions where known.
    private(set) var waiting: [String: Set<Replica.ID>] = [:]
    /// Whether a file named a table or column this store's versions do not have: one written
    /// before versions that a store created from the app's newer schema has not taken on yet.
    private(set) var namedUnknownSchema = false

    /// Why the file at `address` could not be used; setting it (or nil, once it was used) makes
    /// it a failure that is not junk.
    subscript(address: String) -> String? {
        get { messages[address] }
        set {
            messages[address] = newValue
            junk.remove(address)
            advice[address] = nil
            forks[address] = nil
            waiting[address] = nil
            if newValue == nil { used.insert(address) } else { used.remove(address) }
        }
    }

    /// Records `error`, met reading the local copy `local` of the file at `address`; for missing
    /// prerequisites, `missing` holds the origins of the transactions the file waits for.
    mutating func record(
        _ error: ExchangeError, reading local: String, as address: String, missing: Set<Replica.ID> = []
    ) {
        self[address] = error.naming(local, as: address).description
        if error.isDamage { junk.insert(address) }
        if case .schemaMismatch = error { namedUnknownSchema = true }
        if case .missingPrerequisites = error { waiting[address] = missing }
        if case .schemaFork(_, _, let theirs) = error {
            advice[address] = error.hint
            forks[address] = theirs
        }
    }

    /// Records that the file at `address` is junk, for `message`.
    mutating func recordJunk(_ message: String, at address: String) {
        messages[address] = message
        junk.insert(address)
    }

    var isEmpty: Bool { messages.isEmpty }
}
