import Foundation
import Tidemark

/// Checks of the shared exchange folder while no `sync` process runs.
enum FolderInspector {
    /// What the folder holds.
    struct Facts {
        /// Files under a final name (`*.tmb`, `watermark.tmw`, `snapshot.tms`) that do not decode
        /// and verify, and files that are neither final nor temporary.
        var problems: [String] = []
        /// Temporary files (`.tmp-…`) left behind, e.g. by a killed writer.
        var temporaries: [String] = []
        /// The tags each numbered bundle inserts rows of, by path.
        var bundleTags: [String: Set<String>] = [:]
    }

    /// Every file in every replica's subfolder: a final name must hold a complete, correctly
    /// signed bundle — a killed writer may leave a temporary behind, never a partial final file.
    static func inspect(_ shared: String) -> Facts {
        var facts = Facts()
        let manager = FileManager.default
        for replica in ((try? manager.contentsOfDirectory(atPath: shared)) ?? []).sorted() {
            let folder = shared + "/" + replica
            for name in ((try? manager.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
                let path = folder + "/" + name
                if name.hasPrefix(".tmp-") {
                    facts.temporaries.append(path)
                } else if name.hasSuffix(".tmb") || name.hasPrefix("watermark") && name.hasSuffix(".tmw")
                    || name == "snapshot.tms"
                {
                    do {
                        facts.bundleTags[path] = try tags(inBundle: path)
                    } catch {
                        facts.problems.append("\(path) is under a final name but does not verify: \(error)")
                    }
                } else {
                    facts.problems.append("\(path): unexpected file in the exchange folder")
                }
            }
        }
        return facts
    }

    /// Decodes and verifies a bundle file without any store; returns the tags its transactions
    /// insert rows of (none for a watermark or snapshot).
    static func tags(inBundle path: String) throws -> Set<String> {
        var tags = Set<String>()
        _ = try Store.inspectBundle(
            at: path,
            transactions: { _, changes in
                for change in changes where change.table == "items" && change.type == .insert {
                    if case .text(let tag)? = change.values.first(where: { $0.name == "tag" })?.value {
                        tags.insert(tag)
                    }
                }
            },
            rowStates: { state in
                // A snapshot (an export for a peer behind the horizon): the live rows it brings.
                guard state.table == "items", state.generation % 2 == 1 else { return }
                if case .text(let tag)? = state.cells.first(where: { $0.name == "tag" })?.value { tags.insert(tag) }
            })
        return tags
    }
}
