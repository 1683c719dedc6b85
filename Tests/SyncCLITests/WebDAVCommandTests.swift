import Foundation
import Testing
import TidemarkTestSupport

/// `sync push`, `pull` and `prune` with a WebDAV URL, against Apache httpd with mod_dav: exact
/// results, one-line errors naming the cause, and the password in no output.
@Suite(.serialized, .enabled(if: WebDAVServer.isInstalled(.apache), "needs apache2"))
struct WebDAVCommandTests {
    @Test func pushPullAndPruneThroughHTTPSAndEveryRefusalIsOneLineThatNeverShowsThePassword() async throws {
        let server = try WebDAVServer(.apache)
        let a = try await CLIStore(replica: "a")
        let b = try await CLIStore(replica: "b")
        try await a.trust(b, as: "b")
        try await b.trust(a, as: "a")
        let https = try #require(server.httpsURL)
        let ca = try #require(server.caFile)
        var outputs: [CommandResult] = []
        func sync(_ store: CLIStore, _ arguments: [String], netrc: String? = nil) async throws -> CommandResult {
            let result = try await SyncProcess.run(
                [arguments[0], "--store", store.path] + arguments.dropFirst(),
                environment: ["NETRC": netrc ?? server.netrc])
            outputs.append(result)
            return result
        }

        try await a.exec("INSERT INTO items(id, name) VALUES ('a-1', 'over https')")
        let pushed = try await sync(a, ["push", "--to", https, "--ca-file", ca])
        #expect(pushed.exitCode == 0 && pushed.stderr.isEmpty, "\(pushed)")
        #expect(pushed.stdoutLines.first?.hasSuffix("to \(https)\(try await a.replicaID())/0000000001.tmb") == true)
        let pulled = try await sync(b, ["pull", "--from", https, "--ca-file", ca])
        #expect(pulled.exitCode == 0 && pulled.stderr.isEmpty, "\(pulled)")
        #expect(pulled.stdoutLines.first == "pulled 1 bundles: 1 transactions, 1 changes", "\(pulled)")
        let pruned = try await sync(a, ["prune", "--ca-file", ca])
        #expect(pruned.exitCode == 0 && pruned.stderr.isEmpty, "\(pruned)")

        // Untrusted and expired certificates, a wrong password, no password, an unsafe netrc file.
        expectFailure(
            try await sync(a, ["push", "--to", https]),
            "\(https): untrusted certificate: it is not signed by an authority this machine trusts",
            hint: "--ca-file")
        let expired = try #require(server.expiredURL)
        expectFailure(
            try await sync(a, ["push", "--to", expired, "--ca-file", ca]),
            "\(expired): untrusted certificate: it expired on 2020-02-01")
        let wrong = server.directory.file("wrong-netrc")
        try "machine 127.0.0.1 login \(WebDAVServer.login) password not-\(server.password)\n".write(
            toFile: wrong, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: wrong)
        expectFailure(
            try await sync(a, ["pull", "--from", server.url], netrc: wrong),
            "\(server.url): the server refused the login and password (401)", hint: "netrc")
        expectFailure(
            try await sync(a, ["pull", "--from", server.url], netrc: "/dev/null"),
            "\(server.url): the server asks for a login (401)", hint: "machine 127.0.0.1 login NAME password SECRET")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: wrong)
        expectFailure(
            try await sync(a, ["push", "--to", server.url], netrc: wrong),
            "cannot use netrc file \(wrong): other users may read it (mode 644): it must be mode 600")

        // URLs that are not collections, that hold credentials, or that would send them in clear.
        let file = "\(server.url)\(try await a.replicaID())/watermark.tmw"
        try await a.exec("INSERT INTO items(id, name) VALUES ('a-2', 'two')")
        _ = try await sync(a, ["pull", "--from", server.url])
        expectFailure(try await sync(a, ["push", "--to", file]), "\(file): is a file, not a collection")
        expectFailure(try await sync(a, ["push", "--to", server.url + "nothing-here/"]), "not found (404)")
        let withPassword = server.url.replacingOccurrences(
            of: "http://", with: "http://\(WebDAVServer.login):\(server.password)@")
        expectFailure(
            try await sync(a, ["push", "--to", withPassword]),
            "cannot use \(server.url) as an exchange folder: it holds a login or password")
        // A name that starts like a loopback address is a name like any other.
        for host in ["tidemark.invalid", "127.0.0.1.tidemark.invalid", "127.tidemark.invalid", "127.0.0.256"] {
            expectFailure(
                try await sync(a, ["push", "--to", "http://\(host)/dav/"]),
                "http:// sends the password and the files in clear; use https://, or allow it for this host with --insecure-http"
            )
        }
        for port in ["0", "65536", "99999"] {
            expectFailure(
                try await sync(a, ["pull", "--from", "http://127.0.0.1:\(port)/dav/"]),
                "cannot use http://127.0.0.1:\(port)/dav/ as an exchange folder: port \(port) is not between 1 and 65535"
            )
        }

        for result in outputs {
            #expect(!result.stdout.contains(server.password) && !result.stderr.contains(server.password), "\(result)")
        }
        #expect(!(try await a.dump()).contains(server.password))
        #expect(!(try await b.dump()).contains(server.password))
    }
}
