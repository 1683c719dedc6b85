import GRDB

extension Store {
    /// Names the author and context name of the current write transaction on the app's writer,
    /// as Core Data's `transactionAuthor` and context `name` do for a save. Call it inside the
    /// app's own `write { db in … }` on the writer the store is attached to, before or after the
    /// transaction's writes: its changes become one history transaction with that authorship
    /// (changes made before the call take it too when a default authorship was set; otherwise
    /// they form an unattributed transaction of their own). Nil for both clears it, before or after
    /// the writes: the whole transaction takes the default authorship, or none.
    ///
    /// Throws `StoreError.notAttached` when the store was opened by path or `db` is another
    /// connection, and `StoreError.authorOutsideTransaction` outside a transaction.
    public func setTransactionAuthor(_ author: String?, contextName: String? = nil, in db: Database) throws {
        guard attachedWriter != nil, try WriterAuthorship.isInstalled(on: db) else {
            throw StoreError.notAttached(path: path)
        }
        guard db.isInsideTransaction else { throw StoreError.authorOutsideTransaction }
        let authorship = Sealer.Authorship(author: author, contextName: contextName, processID: options.processID)
        try authorship.check()
        try WriterAuthorship.set(authorship, scope: 1, in: db)
    }

    /// Names the author and context name of every later write transaction on the app's writer that
    /// does not name its own. Nil for both goes back to unattributed writes.
    ///
    /// Throws `StoreError.notAttached` when the store was opened by path.
    public func setDefaultTransactionAuthor(_ author: String?, contextName: String? = nil) throws {
        guard attachedWriter != nil else { throw StoreError.notAttached(path: path) }
        let authorship = Sealer.Authorship(author: author, contextName: contextName, processID: options.processID)
        try authorship.check()
        try mappingErrors {
            try database.writeWithoutTransaction { db in try WriterAuthorship.set(authorship, scope: 0, in: db) }
        }
    }
}
