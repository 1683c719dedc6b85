/// A pull that applied bundles and then failed: reading the members' watermarks, writing this
/// replica's own into its subfolder, tidying that, or pruning. What it applied stays applied (each
/// bundle is a transaction of its own); `imported` says what, and `error` what failed. Run the pull
/// again once the cause is fixed: it applies nothing twice.
public struct PullFailedAfterApplying: Error, CustomStringConvertible {
    /// The bundles applied before the failure, in order.
    public var imported: [Store.ImportSummary]
    /// What failed.
    public var error: any Error

    public var description: String { "\(error) (after applying \(imported.count) bundles)" }
}

extension Store {
    /// Runs what a pull does once it applied `imported`; a failure then is thrown as
    /// `PullFailedAfterApplying` when a bundle was applied, so that the caller learns of both.
    func afterApplying<T>(_ imported: [ImportSummary], _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error where !imported.isEmpty {
            throw PullFailedAfterApplying(imported: imported, error: error)
        }
    }
}
