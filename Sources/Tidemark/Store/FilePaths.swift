/// Path arithmetic on the strings users give: Foundation's `deletingLastPathComponent` traps on a
/// one-character relative path (`j`, `j/`) on Linux.
enum FilePaths {
    /// The folder holding `path`: what precedes its last component, `.` when it has none.
    static func folder(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        var folder = trimmed[..<slash]
        while folder.count > 1, folder.hasSuffix("/") { folder = folder.dropLast() }
        return folder.isEmpty ? "/" : String(folder)
    }
}
