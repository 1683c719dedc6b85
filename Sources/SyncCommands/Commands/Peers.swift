import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Peers: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage the replicas whose bundles this store trusts.",
            subcommands: [Add.self, List.self, Remove.self, Retire.self])

        struct Add: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Trust a replica's public key under a name.")
            @OptionGroup var store: StoreOptions
            @Argument(help: "A name for the peer.") var name: String
            @Argument(help: "Its public key, as `sync identity` prints it (base64).") var publicKey: String

            func run() throws {
                try store.open().addPeer(name: name, publicKeyBase64: publicKey)
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List trusted peers.")
            @OptionGroup var store: StoreOptions
            @Flag(help: "Print a JSON array.") var json = false

            func run() throws {
                let opened = try store.open()
                let peers = try opened.peers()
                let retired = Set(try opened.members().filter(\.retired).map(\.id))
                if json {
                    let items = peers.map {
                        [
                            "name": .string($0.name), "public_key": .string($0.publicKeyBase64),
                            "id": .string($0.id.description), "retired": .bool(retired.contains($0.id)),
                        ] as JSON
                    }
                    Output.line(JSON.array(items).text)
                } else {
                    for peer in peers {
                        Output.line(
                            "\(peer.name) \(peer.publicKeyBase64)\(retired.contains(peer.id) ? " (retired)" : "")")
                    }
                }
            }
        }

        struct Retire: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Stop a silent member from holding history; it stays trusted and rejoins when it syncs again."
            )
            @OptionGroup var store: StoreOptions
            @Argument(help: "The peer's name.") var name: String

            func run() throws {
                try store.open().retire(peer: name)
            }
        }

        struct Remove: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Stop trusting a peer; takes effect on the next import.")
            @OptionGroup var store: StoreOptions
            @Argument(help: "The peer's name.") var name: String

            func run() throws {
                try store.open().removePeer(name: name)
            }
        }
    }
}
