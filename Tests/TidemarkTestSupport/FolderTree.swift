import Foundation

/// Every file under a folder with its size and modification time, to tell which files an operation
/// created, changed or removed.
public struct FolderTree: Sendable, Equatable {
    /// One file's identity and state.
    public struct Entry: Sendable, Equatable {
        public var size: Int
        public var modified: Date
        public var inode: UInt64
        public var isDirectory: Bool
    }

    /// Paths relative to the root, e.g. `0123…/0000000001.tmb`.
    public var entries: [String: Entry]

    /// Reads the tree under `root` (missing root: empty).
    public init(_ root: String) {
        var entries: [String: Entry] = [:]
        let manager = FileManager.default
        for relative in (manager.subpaths(atPath: root) ?? []) {
            guard let attributes = try? manager.attributesOfItem(atPath: root + "/" + relative) else { continue }
            entries[relative] = Entry(
                size: (attributes[.size] as? NSNumber)?.intValue ?? 0,
                modified: attributes[.modificationDate] as? Date ?? .distantPast,
                inode: (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0,
                isDirectory: attributes[.type] as? FileAttributeType == .typeDirectory)
        }
        self.entries = entries
    }

    /// The relative paths created, changed (size, time or inode) or removed since `before`.
    public func touched(since before: FolderTree) -> [String] {
        Set(entries.keys).union(before.entries.keys).filter { entries[$0] != before.entries[$0] }.sorted()
    }

    /// The relative paths of files (not folders).
    public var files: [String] { entries.filter { !$0.value.isDirectory }.map(\.key).sorted() }

    /// The absolute paths of the files (not folders) under `root`.
    public static func files(in root: String) -> [String] { FolderTree(root).files.map { root + "/" + $0 } }
}
