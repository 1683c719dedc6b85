import ArgumentParser
import Tidemark

extension SyncCLI {
    struct Encryption: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Turn end-to-end encryption of the group's exchange files on or off, or show it.",
            discussion: """
                The setting is replicated like a retirement: every member follows it once it has pulled it. While it is \
                on, every file a member writes to an exchange (bundles, snapshots, watermarks) is an age file that only \
                the group's members can decrypt, and `sync export --peer NAME` encrypts for that peer. See \
                Protocol/encryption.md for what the storage still sees.
                """)

        enum State: String, ExpressibleByArgument, CaseIterable {
            case on, off
        }

        @OptionGroup var store: StoreOptions

        @Argument(help: "on or off; without it, print the setting.")
        var state: State?

        func run() throws {
            let opened = try store.open()
            guard let state else {
                if try opened.encryptsBeforeLearningTheSetting() {
                    Output.line(
                        "encryption on: a peer this replica trusts encrypts its exchange files, so this replica does too "
                            + "until it pulls the group's setting")
                } else {
                    Output.line("encryption \(try opened.encryption().isOn ? "on" : "off")")
                }
                return
            }
            if try opened.setEncryption(state == .on) == nil {
                Output.line("encryption is already \(state.rawValue); nothing changed")
            } else if state == .on {
                Output.line(
                    "encryption on: from its next push this replica encrypts what it writes to an exchange for the group's "
                        + "members; each member does the same once it pulls this setting")
            } else {
                Output.line(
                    "encryption off: from its next push this replica writes its exchange files in clear; each member does "
                        + "the same once it pulls this setting")
            }
        }
    }
}
