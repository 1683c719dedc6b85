import Foundation
import NIOHTTP1

/// An exchange folder kept in a WebDAV collection (RFC 4918): Nextcloud, ownCloud, Apache
/// mod_dav, rclone, nginx… Protocol/exchange.md §7.2 says how each operation maps to requests:
/// `PROPFIND` with depth 1 lists; a file is uploaded whole under a `.tmp-` name, then published
/// with `MOVE` and `Overwrite: F` (refused with 412 when the name is taken: never replaced) or
/// replaced with `MOVE` and `Overwrite: T`; `DELETE` removes; `MKCOL` creates a replica's
/// collection. Reads download into a local folder, once: a header read fetches the start of a
/// file with `Range`, and reading the rest continues from there.
final class WebDAVTransport: ExchangeTransport {
    /// The collection, with a trailing slash.
    let base: URL
    let location: String
    private let client: WebDAVClient
    /// Where downloads and files to upload are kept; removed by `close()`.
    private let scratch: String
    /// Listings made by this transport, by folder; a folder's is dropped when this transport
    /// writes there.
    private var listings: [String: [Multistatus.Resource]] = [:]
    private var copies: [String: Copy] = [:]

    private struct Copy {
        var path: String
        var length: Int64
        /// The file's validator when the bytes were fetched.
        var validator: String?
        var complete: Bool
    }

    /// Bytes downloaded and uploaded so far.
    var bytesDownloaded: Int64 { client.bytesDownloaded }
    var bytesUploaded: Int64 { client.bytesUploaded }

    init(url: String, settings: ExchangeSettings) throws {
        base = try Self.normalized(url)
        location = WebDAVClient.display(base)
        let host = base.host ?? ""
        if base.scheme == "http" && !Self.isLoopback(host) && !settings.allowInsecureHTTP {
            throw ExchangeError.badLocation(
                location,
                reason:
                    "http:// sends the password and the files in clear; use https://, or allow it for this host with ExchangeSettings.allowInsecureHTTP"
            )
        }
        let credentials = try Netrc.credentials(for: host, explicit: settings.netrcPath)
        client = try WebDAVClient(settings: settings, credentials: credentials)
        scratch =
            FileManager.default.temporaryDirectory.appendingPathComponent(
                "tidemark-webdav-\(UUID().uuidString)"
            ).path
        do {
            try FileManager.default.createDirectory(
                atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try checkCollection()
        } catch {
            try? FileManager.default.removeItem(atPath: scratch)
            throw error
        }
    }

    /// `url` with a trailing slash; refused when it is not an http(s) URL with a host, or when it
    /// holds credentials (they belong in the netrc file, where no command line or log shows them).
    static func normalized(_ url: String) throws -> URL {
        guard var components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { throw ExchangeError.badLocation(url, reason: "not an http:// or https:// URL with a host") }
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
            throw ExchangeError.badLocation(
                components.string ?? "the URL",
                reason: "it holds a login or password: put them in the netrc file ($NETRC, or ~/.netrc), mode 600")
        }
        guard components.query == nil, components.fragment == nil else {
            throw ExchangeError.badLocation(url, reason: "a collection's URL has no query or fragment")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw ExchangeError.badLocation(url, reason: "port \(port) is not between 1 and 65535")
        }
        components.scheme = scheme
        if !components.path.hasSuffix("/") { components.path += "/" }
        guard let normalized = components.url else { throw ExchangeError.badLocation(url, reason: "not a valid URL") }
        return normalized
    }

    /// Whether `host` names this machine: `localhost`, `::1`, or a dotted IPv4 address in
    /// 127.0.0.0/8. Judged on the address as written, not on a name's first characters: a name
    /// such as `127.0.0.1.example.net` resolves wherever its owner wants.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { part in
                (1...3).contains(part.utf8.count) && part.utf8.allSatisfy { (48...57).contains($0) }
                    && Int(part)! <= 255
            }
    }

    /// The URL of `name` in `folder` ("" for the collection itself); a folder's ends with a slash.
    private func url(_ folder: String, _ name: String? = nil) -> URL {
        var path = base.path(percentEncoded: true)
        if !folder.isEmpty { path += Self.encode(folder) + "/" }
        if let name { path += Self.encode(name) }
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        components.percentEncodedPath = path
        return components.url!
    }

    private static func encode(_ component: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#")
        return component.addingPercentEncoding(withAllowedCharacters: allowed) ?? component
    }

    func address(of name: String, in folder: String) -> String { WebDAVClient.display(url(folder, name)) }

    // MARK: - Listing

    private static let propfindBody = """
        <?xml version="1.0" encoding="utf-8"?>
        <propfind xmlns="DAV:"><prop><resourcetype/><getcontentlength/><getlastmodified/><getetag/></prop></propfind>
        """

    /// The resources inside `folder` (depth 1), or nil when it does not exist.
    private func list(_ folder: String) throws -> [Multistatus.Resource]? {
        if let listed = listings[folder] { return listed }
        let target = url(folder)
        let response = try client.request(
            .init(rawValue: "PROPFIND"), target, headers: [("Depth", "1"), ("Content-Type", "application/xml")],
            body: Self.propfindBody)
        if response.status == 404 && !folder.isEmpty { return nil }
        guard response.status == 207 else { throw client.fault(response, target) }
        let own = Multistatus.path(of: target.path(percentEncoded: true))
        let resources = try Multistatus(response.body, url: WebDAVClient.display(target)).resources.filter {
            $0.path != own && $0.found
        }
        listings[folder] = resources
        return resources
    }

    /// Checks that the URL names a collection, so that a mistyped URL is reported before anything
    /// is written.
    private func checkCollection() throws {
        let response = try client.request(
            .init(rawValue: "PROPFIND"), base, headers: [("Depth", "0"), ("Content-Type", "application/xml")],
            body: Self.propfindBody)
        if [400, 404, 409].contains(response.status) {
            // The URL without its slash may name a file.
            var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
            components.percentEncodedPath = String(components.percentEncodedPath.dropLast())
            if let file = components.url, !components.percentEncodedPath.isEmpty,
                let probe = try? client.request(
                    .init(rawValue: "PROPFIND"), file, headers: [("Depth", "0")], body: Self.propfindBody),
                probe.status == 207
            {
                throw ExchangeError.remoteFailed(url: WebDAVClient.display(file), .notACollection)
            }
        }
        guard response.status == 207 else { throw client.fault(response, base) }
        let resources = try Multistatus(response.body, url: location).resources
        guard let own = resources.first else {
            throw ExchangeError.remoteFailed(url: location, .badResponse("the listing names nothing, not even the URL"))
        }
        guard own.isCollection else { throw ExchangeError.remoteFailed(url: location, .notACollection) }
    }

    func folders() throws -> [String] {
        (try list("") ?? []).filter(\.isCollection).compactMap { $0.path.split(separator: "/").last.map(String.init) }
            .sorted()
    }

    func files(in folder: String) throws -> [ExchangeEntry] {
        (try list(folder) ?? []).filter { !$0.isCollection }.compactMap { resource in
            resource.path.split(separator: "/").last.map {
                ExchangeEntry(
                    name: String($0), size: resource.size, modified: resource.modified,
                    validator: Self.validator(resource))
            }
        }.sorted { $0.name < $1.name }
    }

    /// What tells whether a file changed: its ETag, weak or strong alike (Apache calls a file's
    /// ETag weak for the second after it was written, then strong: the same file), else its size
    /// and time.
    static func validator(_ resource: Multistatus.Resource) -> String? {
        if let etag = resource.etag { return etag.hasPrefix("W/") ? String(etag.dropFirst(2)) : etag }
        return resource.modified.map { "\(resource.size ?? -1) \($0.timeIntervalSince1970)" }
    }

    // MARK: - Reading

    func localCopy(of name: String, in folder: String, prefix: Int?) throws -> ExchangeLocalCopy {
        let key = folder + "/" + name
        let listed = try list(folder)?.first { $0.path.hasSuffix("/" + name) && !$0.isCollection }
        guard let listed else {
            throw ExchangeError.remoteFailed(url: address(of: name, in: folder), .notFound)
        }
        let validator = Self.validator(listed)
        var copy =
            copies[key]
            ?? Copy(path: scratch + "/" + UUID().uuidString, length: 0, validator: validator, complete: false)
        if copy.validator != validator {
            // Replaced since it was fetched (a watermark, a snapshot): start again.
            copy = Copy(path: copy.path, length: 0, validator: validator, complete: false)
        }
        let wanted = prefix.map(Int64.init)
        if copy.complete || (wanted.map { copy.length >= $0 } ?? false) {
            return ExchangeLocalCopy(path: copy.path, complete: copy.complete)
        }
        // A prefix as long as the file is the file.
        let end: Int64? = wanted.flatMap { wanted in listed.size.map { $0 <= wanted } == true ? nil : wanted - 1 }
        // Only a strong ETag may guard a range (RFC 9110 §13.1.5).
        let ifRange = listed.etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
        let result: (status: Int, length: Int64, total: Int64?)
        do {
            result = try client.download(
                url(folder, name), offset: copy.length, end: end, ifRange: ifRange, into: copy.path)
        } catch {
            copies[key] = copy
            throw error
        }
        switch result.status {
        case 200:
            copy.length = result.length
            copy.complete = true
        case 206:
            copy.length = result.length
            copy.complete = end == nil || result.total.map { copy.length >= $0 } == true
        case 416 where copy.length > 0 && end == nil:
            copy.complete = true
        default:
            copies[key] = nil
            try? FileManager.default.removeItem(atPath: copy.path)
            let target = url(folder, name)
            throw client.fault(
                WebDAVClient.Response(status: result.status == 0 ? 502 : result.status, headers: [:], body: Data()),
                target)
        }
        copies[key] = copy
        return ExchangeLocalCopy(path: copy.path, complete: copy.complete)
    }

    // MARK: - Writing

    func createFolder(_ folder: String) throws {
        if try list(folder) != nil { return }
        let target = url(folder)
        let response = try client.request(.init(rawValue: "MKCOL"), target)
        listings[folder] = nil
        listings[""] = nil
        // 405: it exists (made meanwhile).
        guard response.status == 201 || response.status == 405 else { throw client.fault(response, target) }
    }

    func temporaryFile(for folder: String) -> String {
        scratch + "/" + ExchangeFolder.temporaryPrefix + UUID().uuidString
    }

    /// Uploads `temporary` under its `.tmp-` name in `folder`; returns that name.
    private func upload(_ temporary: String, to folder: String) throws -> String {
        let name = ExchangeFolder.temporaryPrefix + UUID().uuidString
        listings[folder] = nil
        try client.upload(temporary, to: url(folder, name))
        return name
    }

    /// Moves `name` to `destination` in `folder`; returns the status.
    private func move(_ name: String, to destination: String, in folder: String, overwrite: Bool) throws -> Int {
        listings[folder] = nil
        let response = try client.request(
            .init(rawValue: "MOVE"), url(folder, name),
            headers: [("Destination", url(folder, destination).absoluteString), ("Overwrite", overwrite ? "T" : "F")])
        return response.status
    }

    func publish(_ temporary: String, in folder: String, as name: (Int) -> String) throws -> String {
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let uploaded = try upload(temporary, to: folder)
        var published = false
        // An upload that was not published is deleted: nothing is left half-done.
        defer { if !published { _ = try? client.request(.DELETE, url(folder, uploaded)) } }
        for attempt in 0..<1000 {
            let candidate = name(attempt)
            let status = try move(uploaded, to: candidate, in: folder, overwrite: false)
            switch status {
            case 201, 204:
                published = true
                return candidate
            // The upload is gone: an earlier try of this MOVE went through and its answer was lost.
            // A server answers the retry 404 (no source), or 412 (the name is taken, by it).
            case 404 where try movedEarlier(uploaded, to: candidate, in: folder),
                412 where try movedEarlier(uploaded, to: candidate, in: folder):
                published = true
                return candidate
            // Taken: the next number.
            case 412: continue
            default:
                throw client.fault(.init(status: status, headers: [:], body: Data()), url(folder, candidate))
            }
        }
        throw ExchangeError.remoteFailed(url: WebDAVClient.display(url(folder)), .conflict(status: 412))
    }

    /// Whether a MOVE of `uploaded` to `destination` in `folder` went through in an earlier try
    /// whose answer was lost: the upload is gone, and the name is there.
    private func movedEarlier(_ uploaded: String, to destination: String, in folder: String) throws -> Bool {
        let names = Set(try files(in: folder).map(\.name))
        return !names.contains(uploaded) && names.contains(destination)
    }

    func replace(_ name: String, in folder: String, with temporary: String) throws {
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        for attempt in 0..<2 {
            let uploaded = try upload(temporary, to: folder)
            let status = try move(uploaded, to: name, in: folder, overwrite: true)
            if status == 201 || status == 204 { return }
            // An earlier try of this MOVE went through and its answer was lost; the retry found the
            // upload gone, and a server may have removed the file it had put in place first
            // (rclone does): put it in place again, once.
            if attempt == 0, !(try files(in: folder).contains { $0.name == uploaded }) { continue }
            _ = try? client.request(.DELETE, url(folder, uploaded))
            throw client.fault(.init(status: status, headers: [:], body: Data()), url(folder, name))
        }
    }

    func remove(_ name: String, in folder: String) throws {
        listings[folder] = nil
        let target = url(folder, name)
        let response = try client.request(.DELETE, target)
        guard (200..<300).contains(response.status) || response.status == 404 else {
            throw client.fault(response, target)
        }
    }

    func close() {
        try? FileManager.default.removeItem(atPath: scratch)
    }
}
