import ArgumentParser
import Foundation
import Tidemark

extension SyncCLI {
    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decode and verify a bundle without any store.",
            discussion: "Exits non-zero when the file does not decode or a signature does not verify.")

        @Argument(help: ArgumentHelp("The bundle file.", valueName: "file"))
        var file: String

        @Flag(help: "Print a JSON object.")
        var json = false

        @Option(
            help: ArgumentHelp(
                "A replica's private key file, to decrypt an encrypted file (or decrypt it with age first).",
                valueName: "path"))
        var key: String?

        func run() throws {
            var transactions: [History.Transaction] = []
            var token = History.Token.zero
            let verified = try Store.inspectBundle(at: file, key: try key.map(KeyFile.load)) { head, changes in
                if transactions.isEmpty { token = .zero }
                token[head.origin] = head.sequence
                transactions.append(
                    History.Transaction(
                        origin: head.origin, sequence: head.sequence, timestamp: head.timestamp, author: head.author,
                        contextName: head.contextName, processID: head.processID, changes: changes, token: token))
            }
            let header = verified.header
            let kind = "\(header.kind)"
            // Tokens after each transaction: the bundle's prerequisites plus what it has delivered so far.
            var running = header.since
            for i in transactions.indices {
                running[transactions[i].origin] = transactions[i].sequence
                transactions[i].token = running
            }
            let senderKey = Data(verified.senderKey).base64EncodedString()
            if json {
                let origins = header.ranges.map {
                    ["id": .string($0.origin.description), "first": .integer($0.first), "last": .integer($0.last)]
                        as JSON
                }
                var document: JSON = [
                    "format": .integer(BundleFormat.version), "kind": .string(kind),
                    "sender": [
                        "name": .string(header.senderName), "id": .string(verified.sender.description),
                        "public_key": .string(senderKey),
                    ],
                    "signature": "valid", "created": .date(header.created), "since": .string(header.since.description),
                    "through": .string(header.through.description), "origins": .array(origins),
                    "transaction_count": .integer(verified.transactionCount),
                    "change_count": .integer(verified.changeCount),
                    "transactions": .lines(transactions.map(HistoryFormatter.json)),
                ]
                if let digest = header.digest, case .object(let members) = document {
                    document = .object(members + [("row_digest", DigestWording.json(digest))])
                }
                Output.line(document.text)
                return
            }
            Output.line(
                "bundle     \(kind), format \(BundleFormat.version), \(verified.transactionCount) transactions, \(verified.changeCount) changes"
            )
            Output.line("sender     \(header.senderName) \(verified.sender) \(senderKey)")
            Output.line("signature  valid (sender and every origin's chain)")
            Output.line("created    \(header.created.iso8601)")
            Output.line("since      \(header.since)")
            Output.line("through    \(header.through)")
            if let digest = header.digest { Output.line("rows       \(DigestWording.line(digest))") }
            for range in header.ranges { Output.line("origin     \(range.origin) #\(range.first)..#\(range.last)") }
            for transaction in transactions { Output.line(HistoryFormatter.text(transaction)) }
        }
    }
}
