import Foundation
import Tidemark

/// Issue 15's cost of encryption: exporting a store's N changes (--changes) to a bundle and
/// importing it into a fresh replica, with the group's encryption on (an age file for two readers)
/// against the same with it off, alternating every repetition in this process.
struct EncryptionWorkload {
    var changes: Int
    var repetitions: Int

    func run(in scratch: URL) throws -> [Report.Row] {
        let path = { (name: String) in scratch.appendingPathComponent(name).path }
        Output.progress("encryption: building a store with \(changes) changes")
        let (store, key, receiver) = try Fixtures.sourceAndEmptyTarget(changes: changes, in: scratch)
        try store.addPeer(name: "target", publicKeyBase64: Data(receiver.publicKey).base64EncodedString())

        var samples: [Bool: (export: [Double], import: [Double])] = [true: ([], []), false: ([], [])]
        var sizes: [Bool: Int] = [:]
        for round in 0...repetitions {
            for encrypted in round % 2 == 0 ? [false, true] : [true, false] {
                // Toggling adds one change to a history of N: the two bundles differ by that much.
                try store.setEncryption(encrypted)
                let bundle = path("bundle-\(encrypted).tmb")
                let exported = try timed { try store.exportBundle(since: .zero, to: bundle, key: key) }
                let isAge = try FileHandle(forReadingFrom: URL(fileURLWithPath: bundle)).read(upToCount: 3)
                guard (isAge == Data("age".utf8)) == encrypted else {
                    throw BenchError.unexpectedState(
                        metric: "encryption.export", side: .tracked, what: "encrypted files",
                        expected: encrypted ? 1 : 0,
                        found: encrypted ? 0 : 1)
                }
                let target = path("target-\(round)-\(encrypted).sqlite")
                let imported = try {
                    let (opened, targetKey) = try Fixtures.copyOfEmptyTarget(in: scratch, to: target)
                    return try timed { try opened.importBundle(at: bundle, key: targetKey) }
                }()
                Fixtures.removeStore(target)
                guard imported.value.appliedChanges >= changes else {
                    throw BenchError.unexpectedState(
                        metric: "encryption.import", side: .tracked, what: "changes imported", expected: Int64(changes),
                        found: Int64(imported.value.appliedChanges))
                }
                if round > 0 {
                    samples[encrypted]!.export.append(exported.seconds)
                    samples[encrypted]!.import.append(imported.seconds)
                }
                sizes[encrypted] = exported.value.bytes
            }
        }
        Output.progress("encryption: bundle \(sizes[false] ?? 0) bytes in clear, \(sizes[true] ?? 0) encrypted")
        return [
            Report.Row(
                metric: "encryption.export", ours: Measurement(samples: samples[true]!.export),
                baseline: Measurement(samples: samples[false]!.export), baselineName: "export, encryption off",
                unit: "s", goal: .atMost(1.1)),
            Report.Row(
                metric: "encryption.import", ours: Measurement(samples: samples[true]!.import),
                baseline: Measurement(samples: samples[false]!.import), baselineName: "import, encryption off",
                unit: "s", goal: .atMost(1.1)),
        ]
    }
}
