import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Expectations shared by the exchange tests.
enum ExchangeExpect {
    /// Every replica's tracked tables equal the first one's, row by row by key.
    static func sameTables(
        _ replicas: [TestReplica], _ context: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let first = try replicas[0].tables()
        for other in replicas.dropFirst() {
            let differences = first.differences(from: try other.tables(), mine: replicas[0].name, theirs: other.name)
            #expect(
                differences.isEmpty,
                "\(context) tables of \(replicas[0].name) and \(other.name) differ:\n\(differences.joined(separator: "\n"))",
                sourceLocation: sourceLocation)
        }
    }

    /// `body` throws an `ExchangeError` accepted by `matches`, and the store file is unchanged.
    @discardableResult
    static func rejected<T>(
        _ replica: TestReplica, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> T,
        matches: (ExchangeError) -> Bool
    ) throws -> ExchangeError? {
        let before = try replica.everything()
        var caught: ExchangeError?
        do {
            _ = try body()
            Issue.record("\(what): was accepted", sourceLocation: sourceLocation)
        } catch let error as ExchangeError {
            caught = error
            #expect(matches(error), "\(what): unexpected error \(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(what): not an ExchangeError: \(error)", sourceLocation: sourceLocation)
        }
        let differences = try replica.everything().differences(from: before, mine: "after", theirs: "before")
        #expect(
            differences.isEmpty, "\(what): the store changed:\n\(differences.joined(separator: "\n"))",
            sourceLocation: sourceLocation)
        return caught
    }
}

extension ExchangeError {
    /// The decoder's error, for a bundle that failed to decode or verify.
    var bundleError: BundleError? {
        if case .badBundle(_, let inner) = self { return inner }
        return nil
    }
}
