import Foundation
import Testing
import Tidemark
import TidemarkTestSupport

/// Library errors speak to app developers: they name the type or setting to use, never a `sync`
/// command or flag (the CLI says those in its own words).
@Suite struct LibraryErrorWordingTests {
    static func expectNoCLIWords(_ error: any Error, naming api: String) {
        let text = "\(error)"
        #expect(text.contains(api), "\(text)")
        #expect(!text.contains("--") && !text.contains("sync "), "\(text)")
    }

    @Test func errorsNameTheSettingNotTheFlag() throws {
        let directory = try TemporaryDirectory("tidemark-wording")
        let a = try TestReplica("a", in: directory)
        let refusals: [(ExchangeSettings, String, String)] = [
            (ExchangeSettings(), "http://example.com/folder", "ExchangeSettings.allowInsecureHTTP"),
            (
                ExchangeSettings(caFile: directory.file("missing-ca.pem")), "https://127.0.0.1:9/folder",
                "ExchangeSettings.caFile"
            ),
        ]
        for (settings, location, api) in refusals {
            do {
                _ = try a.store.push(to: location, key: a.key, settings: settings)
                Issue.record("pushed to \(location)")
            } catch {
                Self.expectNoCLIWords(error, naming: api)
            }
        }
        do {
            try a.store.addPeer(name: "b", publicKeyBase64: "b \(a.publicKeyBase64)")
            Issue.record("took a name and a key for a key")
        } catch {
            Self.expectNoCLIWords(error, naming: "identity line")
        }
        do {
            try a.store.migrate(Store.Migration(sql: "DROP TABLE items"))
            Issue.record("dropped a tracked table")
        } catch {
            Self.expectNoCLIWords(error, naming: "Migration.untrack")
        }
    }
}
