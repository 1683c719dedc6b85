import ArgumentParser
import Tidemark

struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List rows that merge rules deleted because merged state broke a constraint, with their values.",
        discussion: "To repair, write the row again (with `sync exec` or any client); the repair syncs like any write.")

    @OptionGroup var store: StoreOptions

    @Flag(help: "Print a JSON array.")
    var json = false

    func run() throws {
        let opened = try store.open()
        let conflicts = try opened.conflicts()
        if json {
            let items = conflicts.map {
                "{\"table\":\(JSONText.quote($0.table)),\"key\":\($0.key),\"generation\":\($0.generation),\"kind\":\"\($0.kind)\""
                    + ",\"detail\":\(JSONText.quote($0.detail)),\"row\":\($0.row),\"detected\":\"\($0.detected.iso8601)\""
                    + ",\"resolved_by\":\"\($0.resolvedBy)\"}"
            }
            Output.line(items.isEmpty ? "[]" : "[\n" + items.joined(separator: ",\n") + "\n]")
            return
        }
        for c in conflicts {
            Output.line("\(c.detected.iso8601)  \(c.kind)  \(c.table) \(c.key)  \(c.detail)")
            Output.line("  discarded \(c.row)")
        }
    }
}
