import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// The warnings of a pull: every failure but junk already reported while the file was as it
    /// is now. Remembers the junk reported, and forgets what it remembered of files no longer listed;
    /// remembers the schema forks found, for `status` (`SchemaForks`).
    func warnings(for failures: PullFailures, sources: PullSources) throws -> [String] {
        try mappingErrors {
            try database.write { db in
                var warnings: [String] = []
                // The damaged bundles of each peer's folder, by folder.
                var damaged: [Replica.ID: [ExchangeFolder.File]] = [:]
                for address in failures.junk {
                    guard let (file, _) = sources.listed[address], file.name.hasSuffix(".tmb") else { continue }
                    damaged[file.replica, default: []].append(file)
                }
                for address in failures.messages.keys.sorted() {
                    let message = failures.messages[address]!
                    if let missing = failures.waiting[address], let (file, fingerprint) = sources.listed[address],
                        let fingerprint,
                        case let blocking = ([file.replica] + missing.sorted()).flatMap({ damaged[$0] ?? [] }),
                        !blocking.isEmpty
                    {
                        // What it waits for may be in a damaged bundle of its folder, or of the
                        // folder of an origin it waits for: only that folder's owner's next push,
                        // which carries it again, clears it. Those of its own folder by name.
                        let named = Set(
                            blocking.map {
                                $0.replica == file.replica ? $0.name : $0.replica.description + "/" + $0.name
                            }
                        ).sorted()
                        let verdict = CheckedFiles.waiting + message
                        let folder = file.replica.description
                        if try CheckedFiles.verdict(
                            db, location: sources.recorded, folder: folder, name: file.name, fingerprint: fingerprint)
                            != verdict
                        {
                            try CheckedFiles.remember(
                                db, location: sources.recorded, folder: folder, name: file.name,
                                fingerprint: fingerprint, verdict: verdict)
                            warnings.append(
                                "skipped \(message): it waits for what \(named.joined(separator: ", ")) held, which is "
                                    + "damaged; the next push of the replica that wrote it carries that again (said once while the files are unchanged)"
                            )
                        }
                        continue
                    }
                    guard failures.junk.contains(address) else {
                        let advice = failures.advice[address].map { "; \($0)" } ?? " (will retry on the next pull)"
                        warnings.append("skipped \(message)\(advice)")
                        continue
                    }
                    guard let (file, fingerprint) = sources.listed[address], let fingerprint else {
                        warnings.append("skipped \(message)")
                        continue
                    }
                    let folder = file.replica.description
                    // Without the address, which spells the folder as this pull was given it.
                    let verdict =
                        message.hasPrefix(address + ": ") ? String(message.dropFirst(address.count + 2)) : message
                    if try CheckedFiles.verdict(
                        db, location: sources.recorded, folder: folder, name: file.name, fingerprint: fingerprint)
                        == verdict
                    {
                        continue
                    }
                    try CheckedFiles.remember(
                        db, location: sources.recorded, folder: folder, name: file.name, fingerprint: fingerprint,
                        verdict: verdict)
                    warnings.append("skipped \(message) (said once while the file is unchanged)")
                }
                // A file that waited and has since applied may wait again later: it is said again then.
                for address in failures.used {
                    guard let (file, fingerprint) = sources.listed[address], let fingerprint,
                        let verdict = try CheckedFiles.verdict(
                            db, location: sources.recorded, folder: file.replica.description, name: file.name,
                            fingerprint: fingerprint),
                        verdict.hasPrefix(CheckedFiles.waiting)
                    else { continue }
                    try CheckedFiles.forget(
                        db, location: sources.recorded, folder: file.replica.description, name: file.name)
                }
                var folders = Set([replica.id.description])
                for (file, _) in sources.listed.values { folders.insert(file.replica.description) }
                try CheckedFiles.keepOnlyFolders(db, location: sources.recorded, folders: folders)
                for folder in folders where folder != replica.id.description {
                    let names = Set(
                        sources.listed.values.filter { $0.file.replica.description == folder }.map(\.file.name))
                    try CheckedFiles.keepOnly(db, location: sources.recorded, folder: folder, names: names)
                }
                let now = HLCTimestamp(milliseconds: options.clock.nowMilliseconds(), counter: 0)
                try SchemaForks.update(db, failures: failures, sources: sources, at: now)
                return warnings
            }
        }
    }
}
