import Foundation
import TidemarkCore

extension Store {
    /// What a push wrote.
    public struct PushSummary: Sendable {
        /// The new bundle, or nil when there was nothing new to push.
        public var path: String?
        /// Its contents.
        public var export: ExportSummary?
    }

    /// Writes the transactions this replica holds beyond its previous push into a new numbered
    /// bundle in its own subfolder of `directory`. Peers that applied every earlier bundle of this
    /// folder can apply the new one.
    public func push(to directory: String, key: KeyFile) throws -> PushSummary {
        let exchange = try ExchangeFolder(directory)
        let folder = exchange.folder(of: replica.id)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ExchangeError.cannotWrite(path: folder, reason: FileProblem.describe(path: folder))
        }
        let existing = exchange.bundles(of: replica.id)
        var since = History.Token.zero
        for bundle in existing.reversed() {
            if let (_, header) = try? ExchangeFolder.header(of: bundle.path) {
                since = header.through
                break
            }
        }
        if since.covers(try currentToken()) { return PushSummary(path: nil, export: nil) }
        let temporary = folder + "/" + ExchangeFolder.temporaryPrefix + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let summary = try exportBundle(since: since, to: temporary, key: key)
        var number = (existing.last?.number ?? 0) + 1
        while !ExchangeFolder.publish(temporary, as: ExchangeFolder.bundleName(number), in: folder) {
            guard FileManager.default.fileExists(atPath: folder + "/" + ExchangeFolder.bundleName(number)) else {
                throw ExchangeError.cannotWrite(path: folder, reason: String(cString: strerror(errno)))
            }
            number += 1
        }
        var export = summary
        export.path = folder + "/" + ExchangeFolder.bundleName(number)
        return PushSummary(path: export.path, export: export)
    }

    /// What a pull did.
    public struct PullSummary: Sendable {
        /// Bundles applied, in order.
        public var imported: [ImportSummary]
        /// Files skipped with the reason; they are retried on the next pull.
        public var warnings: [String]
        /// The watermark file written.
        public var watermark: String
    }

    /// Applies every bundle in the peers' subfolders of `directory` that this store lacks, in an
    /// order that satisfies their prerequisites. A damaged, partial or untrusted file is reported
    /// in `warnings` and retried next time; it does not stop the others. Finally writes this
    /// replica's signed watermark (the token it has applied) into its own subfolder.
    public func pull(from directory: String, key: KeyFile) throws -> PullSummary {
        let exchange = try ExchangeFolder(directory)
        var pending: [String] = []
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            pending += exchange.bundles(of: replica).map(\.path)
        }
        var imported: [ImportSummary] = []
        var failures: [String: String] = [:]
        var progress = true
        while progress && !pending.isEmpty {
            progress = false
            var waiting: [String] = []
            let token = try currentToken()
            for path in pending {
                do {
                    let (_, header) = try ExchangeFolder.header(of: path)
                    if token.covers(header.through) { continue }
                    let summary = try importBundle(at: path)
                    if !summary.alreadyApplied { imported.append(summary) }
                    progress = true
                    failures[path] = nil
                } catch let error as ExchangeError {
                    if case .missingPrerequisites = error { waiting.append(path) }
                    failures[path] = error.description
                } catch let error as StoreError {
                    throw error
                }
            }
            pending = waiting
        }
        for replica in try exchange.replicaFolders(except: self.replica.id) {
            let path = exchange.folder(of: replica) + "/" + ExchangeFolder.watermarkName
            do { try readWatermark(at: path) } catch let error as ExchangeError { failures[path] = error.description }
        }
        let warnings = failures.keys.sorted().map { "skipped \(failures[$0]!) (will retry on the next pull)" }
        let watermark = try writeWatermark(in: exchange, key: key)
        return PullSummary(imported: imported, warnings: warnings, watermark: watermark)
    }

    /// Writes `DIR/<id>/watermark.tmw`: a signed bundle of kind watermark whose `through` token is
    /// what this replica has applied. Replaced atomically.
    func writeWatermark(in exchange: ExchangeFolder, key: KeyFile) throws -> String {
        let folder = exchange.folder(of: replica.id)
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ExchangeError.cannotWrite(path: folder, reason: FileProblem.describe(path: folder))
        }
        let path = folder + "/" + ExchangeFolder.watermarkName
        let token = try currentToken()
        _ = try exportBundle(since: token, to: path, key: key, kind: .watermark)
        return path
    }
}
