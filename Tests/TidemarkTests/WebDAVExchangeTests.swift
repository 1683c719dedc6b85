import Foundation
import Testing
import TidemarkCore
import TidemarkTestSupport

@testable import Tidemark

/// Exchange folders on real WebDAV servers (Apache httpd with mod_dav, and `rclone serve webdav`),
/// started on the loopback by the tests; faults are injected by a proxy in front of Apache.
@Suite(.serialized, .enabled(if: WebDAVServer.allInstalled, "needs apache2, rclone and python3"))
struct WebDAVExchangeTests {
    /// Every file under a final name in the served folder verifies; no temporary is left.
    static func expectSoundFiles(_ server: WebDAVServer, _ context: String = "") throws {
        let files = FolderTree.files(in: server.root)
        for file in files {
            let name = (file as NSString).lastPathComponent
            #expect(!name.hasPrefix(".tmp-"), "\(context) a temporary was left: \(file)")
            if name.hasPrefix(".") { continue }
            #expect(
                (try? Store.inspectBundle(at: file, transactions: { _, _ in })) != nil,
                "\(context) \(file) does not verify")
        }
    }

    /// The workload of the folder tests, through each server (Apache over HTTPS with the test CA),
    /// then pulls until every member knows every watermark: the collection then holds no bundle
    /// every member has applied, and every file in it verifies.
    @Test(arguments: WebDAVServer.Kind.allCases)
    func threeReplicasConvergeThroughAWebDAVServerAndItsFilesArePruned(_ kind: WebDAVServer.Kind) async throws {
        let server = try WebDAVServer(kind)
        let location = server.httpsURL ?? server.url
        let settings = ExchangeSettings(netrcPath: server.netrc, caFile: server.caFile)
        let directory = try TemporaryDirectory("tidemark-webdav-converge")
        let replicas = try await ExchangeRoundTripTests.convergeThree(
            through: location, in: directory, label: "threeReplicasConvergeThrough \(kind)", settings: settings,
            options: server.caFile.map { ["--ca-file", $0] } ?? [], environment: ["NETRC": server.netrc])
        for _ in 0..<2 {
            for replica in replicas {
                let pulled = try replica.store.pull(from: location, key: replica.key, settings: settings)
                #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
            }
        }
        let tokens = try replicas.map { try $0.store.currentToken() }
        for file in FolderTree.files(in: server.root) where file.hasSuffix(".tmb") {
            let bundle = try Store.inspectBundle(at: file, transactions: { _, _ in })
            #expect(
                !tokens.allSatisfy { $0.covers(bundle.header.through) },
                "\(kind): \(file) is applied by every member but was not pruned")
        }
        try Self.expectSoundFiles(server, "\(kind):")
    }

    /// Two replicas through Apache behind the fault proxy, with short timeouts.
    final class Faulty {
        let server: WebDAVServer
        let proxy: FaultProxy
        let directory: TemporaryDirectory
        let a: TestReplica
        let b: TestReplica
        var settings: ExchangeSettings
        var rows = 0

        init() throws {
            server = try WebDAVServer(.apache)
            proxy = try FaultProxy(upstream: server)
            directory = try TemporaryDirectory("tidemark-webdav-faults")
            a = try TestReplica("a", in: directory)
            b = try TestReplica("b", in: directory)
            try TestReplica.trustEachOther([a, b])
            settings = ExchangeSettings(
                netrcPath: server.netrc, timeout: 1.5, connectTimeout: 1, retries: 0, retryDelay: 0.05)
        }

        var url: String { proxy.url }

        func write(_ replica: TestReplica) throws {
            rows += 1
            _ = try replica.store.execute(
                sql:
                    "INSERT INTO items(id, name) VALUES ('\(replica.name)-\(rows)', '\(String(repeating: "x", count: 300))')",
                author: replica.name)
        }

        /// With no fault left, both push and pull until they hold the same rows.
        func converge() throws {
            try proxy.inject([])
            for _ in 0..<2 {
                for replica in [a, b] {
                    _ = try replica.store.push(to: url, key: replica.key, settings: settings)
                    let pulled = try replica.store.pull(from: url, key: replica.key, settings: settings)
                    #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
                }
            }
            try ExchangeExpect.sameTables([a, b])
            try WebDAVExchangeTests.expectSoundFiles(server)
        }

        /// Runs `body`, which must fail with `ExchangeError.remoteFailed` at a URL under the
        /// proxy's, and returns the fault.
        func failure(_ body: () throws -> Void) throws -> RemoteFault? {
            do {
                try body()
            } catch ExchangeError.remoteFailed(let url, let fault) {
                #expect(url.hasPrefix(proxy.url), "\(url)")
                return fault
            }
            Issue.record("no error")
            return nil
        }
    }

    @Test func aDroppedUploadPublishesNothingAndTheNextPushSucceeds() throws {
        let group = try Faulty()
        try group.write(group.a)
        try group.proxy.inject([.init("drop-request", method: "PUT", times: 5)])
        let fault = try group.failure {
            _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        }
        #expect(fault == .connectionLost)
        #expect(!FolderTree.files(in: group.server.root).contains { $0.hasSuffix(".tmb") })
        try Self.expectSoundFiles(group.server)
        try group.converge()
    }

    @Test func aLostPublishingRaceTakesTheNextNumberAndOtherRefusalsPublishNothing() throws {
        let group = try Faulty()
        try group.write(group.a)
        // 412: the name is taken (as when another process of the replica published it first).
        // (A MOVE's path is its source, the upload's temporary name: the first MOVE publishes.)
        try group.proxy.inject([.init("status", method: "MOVE", status: 412)])
        let pushed = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        #expect(pushed.path?.hasSuffix("/0000000002.tmb") == true, "\(pushed.path ?? "nil")")
        // 409 and 403: refused; the upload is removed and nothing is published.
        try group.write(group.a)
        for status in [409, 403] {
            try group.proxy.inject([.init("status", method: "MOVE", times: 5, status: status)])
            let fault = try group.failure {
                _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
            }
            #expect(fault == (status == 409 ? .conflict(status: 409) : .forbidden))
            #expect(!FileManager.default.fileExists(atPath: group.server.root + "/\(group.a.id)/0000000003.tmb"))
            try Self.expectSoundFiles(group.server)
        }
        try group.converge()
    }

    /// A MOVE the server carried out, whose answer was lost: the retry finds the upload gone. rclone
    /// answers it 412 (the name is taken, by the file just moved there), Apache 404; for a watermark
    /// (replaced) rclone first removes what it had put in place. Each publishes, once, and says so.
    @Test(arguments: WebDAVServer.Kind.allCases)
    func aMoveWhoseAnswerWasLostPublishedAndSaysSo(_ kind: WebDAVServer.Kind) throws {
        let server = try WebDAVServer(kind)
        let proxy = try FaultProxy(upstream: server)
        let directory = try TemporaryDirectory("tidemark-webdav-lost-answer")
        let (a, b) = (try TestReplica("a", in: directory), try TestReplica("b", in: directory))
        try TestReplica.trustEachOther([a, b])
        let settings = ExchangeSettings(
            netrcPath: server.netrc, timeout: 3, connectTimeout: 1, retries: 2, retryDelay: 0.05)
        _ = try a.store.execute(sql: "INSERT INTO items(id, name) VALUES ('a-1', 'one')")
        try proxy.inject([.init("lose-answer", method: "MOVE")])
        let pushed = try a.store.push(to: proxy.url, key: a.key, settings: settings)
        #expect(pushed.path?.hasSuffix("/0000000001.tmb") == true, "\(pushed.path ?? "nil")")
        try proxy.inject([.init("lose-answer", method: "MOVE")])
        let pulled = try b.store.pull(from: proxy.url, key: b.key, prune: false, settings: settings)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(try b.tables() == a.tables())
        let files = FolderTree.files(in: server.root).map { ($0 as NSString).lastPathComponent }
        #expect(files.filter { $0.hasSuffix(".tmb") } == ["0000000001.tmb"], "published once: \(files)")
        #expect(files.filter { $0 == "watermark.tmw" }.count == 1, "the watermark is in place: \(files)")
        try Self.expectSoundFiles(server)
    }

    @Test func transientFaultsAreRetriedAndPersistentOnesReportedThenRetried() throws {
        let group = try Faulty()
        try group.write(group.a)
        // One 503 on the upload and one on the listing: retried, the push succeeds.
        group.settings.retries = 2
        try group.proxy.inject([
            .init("status", method: "PUT", status: 503), .init("status", method: "PROPFIND", status: 502),
        ])
        #expect(try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings).path != nil)
        // A server that keeps failing is reported after the retries.
        try group.write(group.a)
        try group.proxy.inject([.init("status", method: "PROPFIND", times: 10, status: 500)])
        let fault = try group.failure {
            _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        }
        #expect(fault == .serverError(status: 500))
        try group.converge()
    }

    @Test func aDownloadCutShortContinuesWhereItStoppedAndNoFileIsFetchedTwice() throws {
        let group = try Faulty()
        // Random values: a bundle larger than the first range a header read fetches.
        for _ in 0..<60 {
            let blob = (0..<2048).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            group.rows += 1
            _ = try group.a.store.execute(
                sql: "INSERT INTO items(id, name) VALUES ('a-\(group.rows)', '\(blob)')", author: "a")
        }
        let pushed = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        let name = (pushed.path! as NSString).lastPathComponent
        let size =
            try FileManager.default.attributesOfItem(
                atPath: group.server.root + "/\(group.a.id)/\(name)")[.size] as! Int
        group.settings.retries = 2
        try group.proxy.clearLog()
        try group.proxy.inject([.init("drop-response", method: "GET", path: name, after: 100)])
        let pulled = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(pulled.imported.map(\.appliedTransactions).reduce(0, +) == 60)
        #expect(size > 128 << 10)
        let gets = try group.proxy.forwarded().filter { $0.method == "GET" && $0.path.hasSuffix(name) }
        // The header first (a range), then the rest from where the cut left it: each byte once.
        #expect(gets.first?.range == "bytes=0-\((128 << 10) - 1)", "\(gets)")
        #expect(gets.count == 3, "\(gets)")
        #expect(gets.map(\.bytes).reduce(0, +) == size, "\(gets) for \(size) bytes")
        // A pull with nothing new downloads nothing: what it read before is remembered with its
        // ETag. (a's pull prunes its bundle and writes a snapshot, which b's next pull reads once.)
        _ = try group.a.store.pull(from: group.url, key: group.a.key, settings: group.settings)
        _ = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
        try group.proxy.clearLog()
        let again = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
        #expect(again.imported.isEmpty && again.warnings.isEmpty)
        #expect(again.bytesDownloaded == 0)
        // And the pull after that: what a pull skipped stays remembered.
        _ = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
        let requests = try group.proxy.forwarded()
        #expect(!requests.contains { $0.method == "GET" }, "\(requests)")
        // Nor does a pull of a, whose own snapshot is on the server: its header is read once.
        #expect(FileManager.default.fileExists(atPath: group.server.root + "/\(group.a.id)/snapshot.tms"))
        _ = try group.a.store.pull(from: group.url, key: group.a.key, settings: group.settings)
        try group.proxy.clearLog()
        let own = try group.a.store.pull(from: group.url, key: group.a.key, settings: group.settings)
        let ownRequests = try group.proxy.forwarded()
        #expect(own.bytesDownloaded == 0, "\(ownRequests)")
        try group.converge()
    }

    @Test func aPeersMissingOrFailingFileIsReportedAndThePullGoesOnWithTheOthers() throws {
        let group = try Faulty()
        let c = try TestReplica("c", in: group.directory)
        try TestReplica.trustEachOther([group.a, group.b, c])
        try group.write(group.a)
        try group.write(c)
        _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        _ = try c.store.push(to: group.url, key: c.key, settings: group.settings)
        for rule in [
            FaultProxy.Rule("status", method: "GET", path: "\(group.a.id)/0000000001.tmb", times: 10, status: 404),
            FaultProxy.Rule("status", method: "GET", path: "\(group.a.id)/0000000001.tmb", times: 10, status: 500),
        ] {
            try group.proxy.inject([rule])
            let pulled = try group.b.store.pull(
                from: group.url, key: group.b.key, prune: false, settings: group.settings)
            #expect(pulled.warnings.count == 1, "\(pulled.warnings)")
            #expect(pulled.warnings.first?.contains("\(group.a.id)/0000000001.tmb: ") == true, "\(pulled.warnings)")
            #expect(try group.b.tables()["items"]?.rows.contains { $0[0] == .text("c-2") } == true)
        }
        try group.proxy.inject([])
        let pulled = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
        #expect(pulled.warnings.isEmpty, "\(pulled.warnings)")
        #expect(try group.b.tables()["items"]?.rows.contains { $0[0] == .text("a-1") } == true)
    }

    /// A bundle cut short on the server (Protocol/exchange.md §6.5): reported once, not downloaded
    /// again while its ETag is unchanged; its owner's next push removes it and carries what it held.
    @Test func aDamagedBundleOnTheServerIsReportedOnceAndReplacedByItsOwner() throws {
        let group = try Faulty()
        for _ in 0..<3 { try group.write(group.a) }
        let pushed = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        let name = (pushed.path! as NSString).lastPathComponent
        let onServer = group.server.root + "/\(group.a.id)/\(name)"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: onServer))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: onServer))

        let first = try group.b.store.pull(from: group.url, key: group.b.key, prune: false, settings: group.settings)
        #expect(first.warnings.count == 1 && first.warnings[0].contains(name), "\(first.warnings)")
        try group.proxy.clearLog()
        let second = try group.b.store.pull(from: group.url, key: group.b.key, prune: false, settings: group.settings)
        #expect(second.warnings.isEmpty, "reported once: \(second.warnings)")
        let gets = try group.proxy.forwarded().filter { $0.method == "GET" && $0.path.hasSuffix(name) }
        #expect(gets.isEmpty, "the unchanged damaged file is not read again: \(gets)")

        let republished = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        #expect(republished.removed.count == 1 && republished.removed[0].contains(name), "\(republished.removed)")
        #expect(!republished.removed[0].contains("/tmp/"), "named by its URL, not a local copy: \(republished.removed)")
        #expect(republished.path != nil)
        try group.converge()
    }

    @Test func aSlowServerAnUnauthorizedAnswerAndADownServerAreOneClearError() throws {
        let group = try Faulty()
        try group.write(group.a)
        try group.proxy.inject([.init("delay", method: "PROPFIND", seconds: 4)])
        #expect(
            try group.failure {
                _ = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
            } == .timedOut)
        // One that sends its answer a byte at a time, each in time for the read timeout: the
        // transfer's pace ends it, not the server (which would close after 30 bytes, 15 s).
        try group.proxy.inject([.init("trickle", method: "PROPFIND", times: 5, after: 30, seconds: 0.5)])
        var started = ContinuousClock.now
        #expect(
            try group.failure {
                _ = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
            } == .timedOut)
        #expect(ContinuousClock.now - started < .seconds(10))
        // A bundle's download the same: reported, and the pull goes on.
        try group.proxy.inject([])
        _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        try group.proxy.inject([.init("trickle", method: "GET", times: 5, after: 30, seconds: 0.5)])
        started = ContinuousClock.now
        let trickled = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
        #expect(trickled.imported.isEmpty)
        #expect(trickled.warnings.contains { $0.contains("the server did not answer in time") }, "\(trickled.warnings)")
        #expect(ContinuousClock.now - started < .seconds(10))
        for (status, fault) in [
            (401, RemoteFault.unauthorized(sentCredentials: true)), (403, .forbidden), (501, .notWebDAV),
        ] {
            try group.proxy.inject([.init("status", method: "PROPFIND", times: 5, status: status)])
            #expect(
                try group.failure {
                    _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
                }
                    == fault)
        }
        // A server whose upload limit is below the bundle's size: said so, and what to raise.
        try group.proxy.inject([])
        try group.write(group.a)
        try group.proxy.inject([.init("status", method: "PUT", times: 5, status: 413)])
        #expect(
            try group.failure { _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings) }
                == .tooLarge)
        // A listing that is not XML: said so, with where, not Foundation's error text.
        try group.proxy.inject([.init("status", method: "PROPFIND", times: 5, status: 207)])
        let unreadable = try group.failure {
            _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        }
        #expect(
            unreadable?.description.hasPrefix("unreadable answer: the listing is not valid XML (line 1, column ")
                == true,
            "\(String(describing: unreadable))")
        // https:// to a port that serves plain HTTP: said so, without the TLS library's own text.
        try group.proxy.inject([])
        let plain = "https://" + group.url.dropFirst("http://".count)
        do {
            _ = try group.a.store.push(to: plain, key: group.a.key, settings: group.settings)
            Issue.record("pushed over TLS to a plain HTTP server")
        } catch ExchangeError.remoteFailed(let url, let fault) {
            #expect(url == plain)
            #expect(fault == .tlsFailed("the server did not answer in TLS (it may serve plain http:// on this port)"))
        }
        let down = "http://127.0.0.1:\(try WebDAVServer.freePort())/"
        do {
            _ = try group.a.store.push(to: down, key: group.a.key, settings: group.settings)
            Issue.record("pushed to a server that is down")
        } catch ExchangeError.remoteFailed(let url, .unreachable(let reason)) {
            #expect(url == down)
            #expect(reason == "connection refused")
        }
        try group.converge()
    }

    /// A 401 from a server that asks only for another scheme than Basic (Digest, say) says so: the
    /// password is not what it refused.
    @Test func aServerThatAsksForAnotherSchemeThanBasicIsToldApartFromARefusedPassword() {
        let digest = WebDAVClient.fault(
            status: 401, ["WWW-Authenticate": #"Digest realm="dav", nonce="n", qop="auth""#], sent: true)
        #expect(digest == .unsupportedAuthentication(schemes: "Digest"))
        let realm = WebDAVClient.fault(
            status: 401, ["WWW-Authenticate": #"Digest realm="basic-users", nonce="n""#], sent: true)
        #expect(realm == .unsupportedAuthentication(schemes: "Digest"))
        #expect(digest.description == "the server asks for Digest authentication (401); only Basic is supported")
        let both = WebDAVClient.fault(
            status: 401, ["WWW-Authenticate": #"Digest realm="dav""#, "www-authenticate": #"Basic realm="dav""#],
            sent: true)
        #expect(both == .unauthorized(sentCredentials: true))
        #expect(WebDAVClient.fault(status: 401, [:], sent: false) == .unauthorized(sentCredentials: false))
    }

    @Test func faultsDuringPruneLeaveTheBundlesForTheNextPrune() throws {
        let group = try Faulty()
        try group.converge()
        // A bundle of a's that b applies: a's next pull prunes it, unless the server refuses.
        try group.write(group.a)
        _ = try group.a.store.push(to: group.url, key: group.a.key, settings: group.settings)
        _ = try group.b.store.pull(from: group.url, key: group.b.key, settings: group.settings)
        let bundles = { FolderTree.files(in: group.server.root + "/\(group.a.id)").filter { $0.hasSuffix(".tmb") } }
        #expect(bundles().count == 1)
        // The snapshot that must hold the bundle's transactions cannot be put in place: the prune
        // fails, and removes nothing.
        _ = try group.a.store.pull(from: group.url, key: group.a.key, prune: false, settings: group.settings)
        try group.proxy.inject([.init("status", method: "MOVE", times: 10, status: 500)])
        #expect(throws: ExchangeError.self) {
            _ = try group.a.store.prune(key: group.a.key, settings: group.settings)
        }
        #expect(bundles().count == 1)
        try Self.expectSoundFiles(group.server)
        // The snapshot is written, the bundle cannot be removed: the next prune removes it.
        try group.proxy.inject([.init("status", method: "DELETE", times: 10, status: 500)])
        let refused = try group.a.store.pull(from: group.url, key: group.a.key, settings: group.settings)
        #expect(bundles().count == 1)
        // Said so, and not counted as removed.
        let report = try #require(refused.prune)
        #expect(report.removedFiles.isEmpty, "\(report)")
        #expect(
            report.warnings.count == 1
                && report.warnings[0].hasSuffix("; the bundle stays, and a later prune removes it"),
            "\(report.warnings)")
        #expect(report.warnings.first?.contains("/\(group.a.id)/0000000001.tmb") == true, "\(report.warnings)")
        try Self.expectSoundFiles(group.server)
        try group.proxy.inject([])
        _ = try group.a.store.pull(from: group.url, key: group.a.key, settings: group.settings)
        #expect(bundles().isEmpty)
        try group.converge()
    }
}
