import Foundation
import TidemarkCore

extension Store {
    /// Transactions as they commit, from this process or any other, starting after `token` (after
    /// the current token when nil) — the counterpart of `NSPersistentStoreRemoteChange`.
    ///
    /// Waits on file-change notifications, not by polling; a safety re-check runs every
    /// `safetyInterval` seconds. Writes by other SQLite clients are sealed and delivered too.
    /// The stream ends with an error if history after its position is deleted before it was read.
    ///
    /// ```swift
    /// // Merge what other processes and replicas commit, and remember where to resume.
    /// for try await transaction in store.transactions(after: savedToken) {
    ///     refresh(for: transaction.changes)
    ///     savedToken = transaction.token
    /// }
    /// ```
    public func transactions(
        after token: History.Token? = nil, safetyInterval: TimeInterval = 2
    ) -> AsyncThrowingStream<History.Transaction, any Error> {
        let (stream, continuation) = AsyncThrowingStream<History.Transaction, any Error>.makeStream()
        let wakeups = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let monitor = FileChangeMonitor(storePath: path, safetyInterval: safetyInterval) {
            wakeups.continuation.yield()
        }
        let task = Task { [self] in
            do {
                var position = try token ?? currentToken()
                var iterator = wakeups.stream.makeAsyncIterator()
                while !Task.isCancelled {
                    for transaction in try fetchHistory(HistoryRequest(after: position)) {
                        continuation.yield(transaction)
                        position = transaction.token
                    }
                    guard await iterator.next() != nil else { break }
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in
            task.cancel()
            monitor.cancel()
            wakeups.continuation.finish()
        }
        return stream
    }
}
