/// The `sync` commands a trial can interrupt.
enum TrialCommand: String, CaseIterable, Comparable {
    /// `sync exec`: one write transaction inserting several rows of one tag.
    case exec
    /// `sync import FILE`: one bundle exported by another replica.
    case `import`
    /// `sync push --to SHARED`.
    case push
    /// `sync pull --from SHARED` (which writes a watermark and prunes).
    case pull
    /// `sync prune`, after the others' watermarks let it remove history and bundles.
    case prune

    static func < (lhs: TrialCommand, rhs: TrialCommand) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
