import Foundation
import GRDB
import TidemarkCore

extension FileManager {
    /// Renames `source` to `destination`, replacing it atomically if it exists.
    func moveItemReplacing(at source: String, to destination: String) throws {
        guard rename(source, destination) == 0 else {
            throw ExchangeError.cannotWrite(path: destination, reason: String(cString: strerror(errno)))
        }
    }
}
