import Foundation
import GRDB
import TidemarkCore

extension Store {
    /// Takes on the schema versions the members publishing in `exchange` have made and this
    /// store's tables already have (Protocol/schema.md §5, taking on versions): a store created
    /// from the app's newer schema, before it applies a file or publishes one. It reads the
    /// header of each trusted member's newest bundle and snapshot there, and takes the versions
    /// of the one whose lineage extends this store's the furthest among those that verify whole
    /// (a header alone is not signed; a copy cut short gives way to another file). Its
    /// own transactions not yet published are relabeled as written under the last of them, so
    /// that none goes out under a version that lacks its columns, and bundles written before
    /// those versions (which name the tables as they were) apply. Returns the versions taken on.
    /// `headers` are what `newestHeaders` read, when the caller read them already.
    /// Files at `skipping` (addresses), junk a pull judged before, are not read.
    func takeOnFolderVersions(
        in exchange: ExchangeFolder, key: KeyFile, headers: [FolderHeader]? = nil, skipping: Set<String> = []
    ) throws -> [Schema.Version] {
        let ours = try lineage()
        let candidates: [(file: ExchangeFolder.File, lineage: [Schema.Version])] =
            try (headers ?? newestHeaders(in: exchange, key: key, skipping: skipping)).compactMap { file, header in
                header.lineage.count > ours.count && Self.extends(header.lineage, ours) ? (file, header.lineage) : nil
            }
        // The longest first; one that does not verify (a copy cut short) gives way to the next.
        var versions: [Schema.Version]?
        for candidate in candidates.sorted(by: { $0.lineage.count > $1.lineage.count }) {
            guard let satisfied = Self.satisfied(Array(candidate.lineage[ours.count...]), by: registrations.all),
                satisfied.count > versions?.count ?? 0,
                let verified = try? Self.verifiedHeader(of: candidate.file, in: exchange, key: key),
                Self.extends(verified.lineage, ours + satisfied)
            else { continue }
            versions = satisfied
        }
        guard let versions else { return [] }
        return try mappingErrors {
            try database.write { db in
                try registrations.refresh(db)
                // Rechecked under the write lock: another process may have migrated meanwhile.
                guard try SchemaLineage.fetch(db).map(\.id) == ours.map(\.id),
                    let registrations = SchemaNaming.adopting(versions, by: registrations.all)
                else { return [] }
                _ = try sealForeign(db)
                return try SchemaLineage.adopt(db, versions, registrations: registrations, store: self)
            }
        }
    }

    /// The tables and columns this store replicates that the trusted members' newest files
    /// (`headers`, from `newestHeaders`), written under its current version, do not name (`t.c`, or a table's name):
    /// a store created from a schema the group has not reached yet, whose writes no member could
    /// read. Empty when they name them all, or when no such file tells (none readable, or none of
    /// that version).
    func namesAhead(of headers: [FolderHeader]) throws -> [String] {
        let ours = try lineage()
        let current = headers.map(\.header).filter {
            $0.lineage.map(\.id) == ours.map(\.id)
        }
        guard !current.isEmpty else { return [] }
        var known: [String: Set<String>] = [:]
        for header in current {
            for table in header.tables { known[table.name, default: []].formUnion(table.columns) }
        }
        var ahead: [String] = []
        for table in replicatedTables where !table.name.hasPrefix(Bookkeeping.prefix) {
            guard let columns = known[table.name] else {
                ahead.append(table.name)
                continue
            }
            ahead += table.columns.filter { !columns.contains($0) }.map { "\(table.name).\($0)" }
        }
        return ahead
    }

    /// A file of a folder, with its header.
    typealias FolderHeader = (file: ExchangeFolder.File, header: BundleHeader)

    /// The headers of each trusted member's newest bundle and snapshot in `exchange`, where they
    /// can be read (not verified), but for the files at `skipping` (addresses).
    func newestHeaders(in exchange: ExchangeFolder, key: KeyFile, skipping: Set<String> = []) throws
        -> [FolderHeader]
    {
        let trusted = Set(try peers().map(\.id))
        var headers: [FolderHeader] = []
        for member in try exchange.replicaFolders(except: replica.id) where trusted.contains(member) {
            var files = try exchange.bundles(of: member).suffix(1).map(\.file)
            let snapshot = ExchangeFolder.File(replica: member, name: ExchangeFolder.snapshotName)
            if try exchange.contains(snapshot.name, of: member) { files.append(snapshot) }
            for file in files where !skipping.contains(exchange.address(of: file)) {
                guard let header = try? exchange.signedHeader(of: file, identity: key.envelopeIdentity) else {
                    continue
                }
                headers.append((file, header))
            }
        }
        return headers
    }

    /// Whether `lineage` starts with every version of `ours`.
    private static func extends(_ lineage: [Schema.Version], _ ours: [Schema.Version]) -> Bool {
        lineage.count >= ours.count && zip(lineage, ours).allSatisfy { $0.id == $1.id }
    }

    /// The longest run of `missing`, from its first version, that tables registered as
    /// `registrations` already satisfy; nil when not even the first.
    private static func satisfied(_ missing: [Schema.Version], by registrations: [TrackedTable]) -> [Schema.Version]? {
        for count in stride(from: missing.count, through: 1, by: -1)
        where SchemaNaming.adopting(Array(missing.prefix(count)), by: registrations) != nil {
            return Array(missing.prefix(count))
        }
        return nil
    }

    /// The header of `file`, read to its end and verified: signed by the replica whose folder
    /// holds it.
    private static func verifiedHeader(of file: ExchangeFolder.File, in exchange: ExchangeFolder, key: KeyFile) throws
        -> BundleHeader?
    {
        let source = try ExchangeSource(path: try exchange.localPath(of: file), identity: key.envelopeIdentity)
        defer { source.close() }
        let decoder = try BundleDecoder(source)
        guard decoder.sender == file.replica else { return nil }
        return try readToEnd(decoder, path: file.name).header
    }
}
