import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the transactions a peer lacks to a signed change bundle.",
            discussion: """
                With --peer, exports what that peer is not known to hold (everything if nothing is known yet). When \
                this store no longer has the history the peer lacks (pruned, or received here by snapshot), it writes \
                a snapshot instead, which `sync import` applies the same way, and says so.
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var key: KeyOptions

        @Option(help: ArgumentHelp("Export what this token does not cover.", valueName: "token"))
        var since: String?

        @Option(help: ArgumentHelp("Export what this trusted peer lacks.", valueName: "name"))
        var peer: String?

        @Option(help: ArgumentHelp("The bundle file to write.", valueName: "file"))
        var out: String

        func validate() throws {
            guard (since == nil) != (peer == nil) else {
                throw ValidationError("give exactly one of --since TOKEN or --peer NAME")
            }
        }

        func run() throws {
            let opened = try store.open()
            var token = History.Token.zero
            var readers: Replica.ID?
            if let since {
                token = try TokenArgument.parse(since)
            } else if let peer {
                token = try opened.knownToken(ofPeer: peer)
                readers = try opened.peers().first { $0.name == peer }?.id
            }
            let summary = try opened.exportWhatPeerLacks(
                since: token, to: out, key: try key.load(forStore: try store.path), readableBy: readers)
            if summary.kind == .snapshot {
                let why =
                    summary.snapshotReason == .changeTooLarge
                    ? "the history since that token holds a change too large for a bundle"
                    : "this store no longer has the history since that token"
                Output.line(
                    "exported a snapshot of \(summary.changeCount) rows, \(summary.bytes) bytes to \(out): \(why) "
                        + "(import it like a bundle)")
            } else {
                Output.line(
                    "exported \(summary.transactionCount) transactions, \(summary.changeCount) changes, \(summary.bytes) bytes to \(out)"
                )
            }
        }
    }
}
