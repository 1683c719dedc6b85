import ArgumentParser
import Foundation
import Tidemark

extension SyncCLI {
    struct Identity: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print this replica's name and public key, for peers to trust (`sync peers add`).",
            discussion: """
                The same key encrypts to the replica when the group encrypts (`sync encryption on`): peers need nothing \
                more. --age-identity prints the replica's age identity, a secret with which `age -d -i FILE` decrypts \
                what the group encrypted for it; --age-recipient prints the matching public `age1…` recipient.
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var key: KeyOptions

        @Flag(
            help: "Print the age identity (AGE-SECRET-KEY-1…) that decrypts files encrypted for this replica. A secret."
        )
        var ageIdentity = false

        @Flag(help: "Print the age recipient (age1…) of this replica.")
        var ageRecipient = false

        func validate() throws {
            if ageIdentity && ageRecipient {
                throw ValidationError("give at most one of --age-identity and --age-recipient")
            }
        }

        func run() throws {
            let opened = try store.open()
            // A key given with --key is this replica's, whatever is printed.
            var given: KeyFile?
            if key.path != nil || ageIdentity {
                let loaded = try key.load(forStore: try store.path)
                guard loaded.publicKey == opened.publicKey else { throw ExchangeError.wrongKey(path: loaded.path) }
                given = loaded
            }
            if ageIdentity, let given {
                Output.line(EnvelopeKeys.ageIdentity(given.envelopeIdentity))
            } else if ageRecipient {
                // A replica's own public key is a valid Ed25519 key, so it maps to an X25519 one.
                Output.line(EnvelopeKeys.ageRecipient(EnvelopeKeys.recipient(ofSigningKey: opened.publicKey)!))
            } else {
                Output.line("\(opened.replica.name) \(Data(opened.publicKey).base64EncodedString())")
            }
        }
    }
}
