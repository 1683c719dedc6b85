import Tidemark
import TidemarkCore

/// How `status`, `pull`, `import`, `migrate` and `log` name schema versions.
enum SchemaWording {
    /// The current version: `v2 3f2a9c1b0d4e (add column items.note)`, or `initial`.
    static func current(_ lineage: [Schema.Version]) -> String {
        guard let version = lineage.last else { return "initial (no migration yet)" }
        return "\(version) (\(clipped(version.change)))"
    }

    /// A wait: `for schema v3 … (add column items.note): 2 bundles held; make that migration (sync
    /// migrate), then pull`, or, once the store has made it, that the next pull applies them.
    static func waiting(_ wait: Store.SchemaWait) -> String {
        "for schema \(wait.version) (\(clipped(wait.version.change))): \(wait.bundleCount) bundle\(wait.bundleCount == 1 ? "" : "s") held; "
            + (wait.isMade
                ? "this store has made that version: the next pull applies them"
                : wait.isForked
                    ? "this store made another version in its place (a fork, below): they will not apply here"
                    : wait.missingBefore == 0
                        ? "make that migration (sync migrate), then pull"
                        : "make the \(wait.missingBefore) migration\(wait.missingBefore == 1 ? "" : "s") before it and then that one (sync migrate), then pull")
    }

    /// A fork with a peer, as `status` lists it: `b made v1 … (…) where this store made v1 … (…)`,
    /// what it means and what to do.
    static func fork(_ fork: Store.SchemaFork, peer: String) -> String {
        "\(peer) made schema \(fork.theirs) (\(clipped(fork.theirs.change))) where this store made \(fork.ours) "
            + "(\(clipped(fork.ours.change))), found by a pull at \(fork.seenAt.iso8601): neither applies the other's "
            + "changes; every replica must make the same migrations in the same order, so one of the two starts "
            + "again as a new store from the other's app version and pulls"
    }

    /// A version a pull or an import took on without a migration, the store's tables having it
    /// already (made from the app's newer schema).
    static func tookOn(_ version: Schema.Version) -> String {
        "took on schema \(version) (\(clipped(version.change))), which this store's tables already had"
    }

    /// A file held for a version this store has not made, as `import` and `init --from` report it.
    static func held(_ version: Schema.Version) -> String {
        "held, not applied: written under schema \(version) (\(clipped(version.change))), which this store has not made; "
            + "make that migration (sync migrate), then pull or import it again"
    }

    /// A change as a line shows it: a table of hundreds of columns made one of thousands of
    /// characters. `status --json` and `log --json` give it whole.
    static func clipped(_ change: Schema.Change) -> String {
        let text = change.description
        return text.count <= 240 ? text : text.prefix(239) + "…"
    }

    /// One version as a JSON object.
    static func json(_ version: Schema.Version) -> JSON {
        [
            "position": .integer(version.position), "id": .string(version.hexID),
            "change": .string(version.change.description),
        ]
    }

    /// The `"schema"` object of `status --json`: the current version (null for the initial
    /// schema), the lineage, what held bundles wait for, and the peers whose lineage forks from
    /// this store's (`names`: the peers' names by id).
    static func json(_ status: Store.Status, names: [Replica.ID: String]) -> JSON {
        let forks = status.forks.map { fork in
            [
                "member": .string(names[fork.peer] ?? fork.peer.description), "id": .string(fork.peer.description),
                "ours": json(fork.ours), "theirs": json(fork.theirs), "seen_at": .date(fork.seenAt),
            ] as JSON
        }
        let waiting = status.waiting.map { wait in
            [
                "version": json(wait.version), "bundles": .integer(wait.bundleCount), "made": .bool(wait.isMade),
                "forked": .bool(wait.isForked),
                "missing_before": .integer(wait.missingBefore),
            ] as JSON
        }
        return [
            "version": status.lineage.last.map(json) ?? .null, "position": .integer(status.lineage.count),
            "lineage": .array(status.lineage.map(json)), "waiting_for": .array(waiting),
            "forks": .array(forks),
        ]
    }
}
