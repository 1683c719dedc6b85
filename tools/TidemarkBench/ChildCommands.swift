import ArgumentParser
import Foundation
import Tidemark

/// Exports every transaction of a store to a bundle; run by `BundleWorkload` in its own process.
struct ChildExport: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "child-export", shouldDisplay: false)
    @Argument var store: String
    @Argument var bundle: String

    func run() throws {
        let opened = try Store.open(store)
        let key = try KeyFile.load(KeyFile.defaultPath(forStore: store))
        let start = ContinuousClock.now
        let summary = try opened.exportBundle(since: .zero, to: bundle, key: key)
        let elapsed = ContinuousClock.now - start
        try BundleWorkload.report(
            .init(
                seconds: elapsed.seconds, peakBytes: BundleWorkload.peakResidentBytes(), changes: summary.changeCount,
                bytes: summary.bytes))
    }
}

/// Imports a bundle into a store; run by `BundleWorkload` in its own process.
struct ChildImport: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "child-import", shouldDisplay: false)
    @Argument var store: String
    @Argument var bundle: String

    func run() throws {
        let opened = try Store.open(store)
        let start = ContinuousClock.now
        let summary = try opened.importBundle(at: bundle)
        let elapsed = ContinuousClock.now - start
        let bytes = (try FileManager.default.attributesOfItem(atPath: bundle)[.size] as? Int) ?? 0
        try BundleWorkload.report(
            .init(
                seconds: elapsed.seconds, peakBytes: BundleWorkload.peakResidentBytes(),
                changes: summary.appliedChanges, bytes: bytes))
    }
}
