import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Conflicts: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List rows that merge rules deleted because merged state broke a constraint, with their values.",
            discussion:
                "To repair, write the row again (with `sync exec` or any client); the repair syncs like any write.")

        @OptionGroup var store: StoreOptions

        @Flag(help: "Print a JSON array.")
        var json = false

        func run() throws {
            let opened = try store.open()
            let conflicts = try opened.conflicts()
            if json {
                Output.line(
                    JSON.lines(
                        conflicts.map {
                            [
                                "table": .string($0.table), "key": .written($0.key),
                                "generation": .integer($0.generation),
                                "kind": .string($0.kind), "detail": .string($0.detail), "row": .written($0.row),
                                "detected": .date($0.detected), "resolved_by": .string($0.resolvedBy.description),
                            ]
                        }
                    ).text)
                return
            }
            for c in conflicts {
                Output.line("\(c.detected.iso8601)  \(c.kind)  \(c.table) \(c.key)  \(c.detail)")
                Output.line("  discarded \(c.row)")
            }
        }
    }
}
