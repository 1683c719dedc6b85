import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The HTTP requests of a WebDAV exchange, made synchronously (the store's API is synchronous),
/// with retries where a fault is transient, and every failure turned into
/// `ExchangeError.remoteFailed` naming the URL (which never holds credentials).
final class WebDAVClient {
    let settings: ExchangeSettings
    private let client: HTTPClient
    /// The `Authorization` header; never printed.
    private let authorization: String?
    /// Bytes of response bodies received, for `tidemark-bench`.
    private(set) var bytesDownloaded: Int64 = 0
    /// Bytes of request bodies sent.
    private(set) var bytesUploaded: Int64 = 0

    init(settings: ExchangeSettings, credentials: Netrc.Credentials?) throws {
        self.settings = settings
        client = try Self.client(for: settings)
        authorization = credentials?.basicAuthorization
    }

    /// Clients by trust roots and timeouts. A client lives as long as the process: shutting one
    /// down while a finished request still hands its connection back to the pool is not safe,
    /// and its connections serve the next push or pull to the same server.
    private static let clients = Clients()

    private final class Clients: @unchecked Sendable {  // @unchecked: `byKey` is guarded by `lock`.
        let lock = NSLock()
        var byKey: [String: HTTPClient] = [:]
    }

    private static func client(for settings: ExchangeSettings) throws -> HTTPClient {
        let key = "\(settings.caFile ?? "")|\(settings.timeout)|\(settings.connectTimeout)"
        clients.lock.lock()
        defer { clients.lock.unlock() }
        if let client = clients.byKey[key] { return client }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile {
            guard FileManager.default.isReadableFile(atPath: caFile),
                let certificates = try? NIOSSLCertificate.fromPEMFile(caFile), !certificates.isEmpty
            else {
                let why =
                    FileManager.default.fileExists(atPath: caFile) ? "not a PEM file of certificates" : "no such file"
                throw ExchangeError.cannotRead(
                    path: caFile, reason: "\(why) (the certificate authorities, ExchangeSettings.caFile)")
            }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        let timeout = TimeAmount.milliseconds(Int64(settings.timeout * 1000))
        // The client retries a refused connection until the connect timeout: a server that is down
        // is reported after `connectTimeout`, not after the longer wait a slow transfer is allowed.
        let connect = TimeAmount.milliseconds(Int64(min(settings.timeout, settings.connectTimeout) * 1000))
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: connect, read: timeout))
        configuration.timeout.write = timeout
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        clients.byKey[key] = client
        return client
    }

    /// A response whose body was kept in memory (listings and short answers).
    struct Response {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    /// Makes a request whose answer is small, trying again where the fault is transient.
    func request(
        _ method: HTTPMethod, _ url: URL, headers: [(String, String)] = [], body: String? = nil
    ) throws -> Response {
        try retrying(url, status: \.status) {
            var request = try self.makeRequest(method, url, headers: headers)
            if let body { request.body = .bytes(Array(body.utf8)) }
            let delegate = CollectingDelegate(window: self.settings.timeout)
            return try self.run(request, delegate: delegate, url: url)
        }
    }

    /// Uploads the local file at `path` with `PUT`, streaming it.
    func upload(_ path: String, to url: URL) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        let response = try retrying(url, status: \.status) { () -> Response in
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw ExchangeError.cannotRead(path: path, reason: FileProblem.describe(path: path))
            }
            defer { try? handle.close() }
            var request = try self.makeRequest(.PUT, url, headers: [("Content-Type", "application/octet-stream")])
            request.body = .stream(contentLength: size) { writer in
                @Sendable func send(_ chunk: Data) -> EventLoopFuture<Void> {
                    let written = writer.write(.byteBuffer(ByteBuffer(bytes: chunk)))
                    return written.flatMap {
                        let next = (try? handle.read(upToCount: 256 << 10)) ?? nil
                        guard let next, !next.isEmpty else { return written.eventLoop.makeSucceededVoidFuture() }
                        return send(next)
                    }
                }
                let first = (try? handle.read(upToCount: 256 << 10)) ?? Data()
                return send(first)
            }
            let result = try self.run(request, delegate: CollectingDelegate(window: self.settings.timeout), url: url)
            if (200..<300).contains(result.status) { self.bytesUploaded += size }
            return result
        }
        guard (200..<300).contains(response.status) else { throw fault(response, url) }
    }

    /// Downloads `url` from byte `offset` (to `end`, inclusive, or to its end) and appends what
    /// arrives to the local file at `path`, which holds its first `offset` bytes. With `ifRange`,
    /// a file that changed since is sent whole instead, and replaces what `path` held.
    func download(
        _ url: URL, offset: Int64, end: Int64?, ifRange: String?, into path: String
    ) throws -> (status: Int, length: Int64, total: Int64?) {
        var offset = offset
        return try retrying(url, status: \.status) {
            var headers: [(String, String)] = []
            if offset > 0 || end != nil {
                headers.append(("Range", "bytes=\(offset)-" + (end.map(String.init) ?? "")))
                if let ifRange { headers.append(("If-Range", ifRange)) }
            }
            let request = try self.makeRequest(.GET, url, headers: headers)
            let delegate = try FileAppendingDelegate(path: path, offset: offset, window: self.settings.timeout)
            defer { delegate.closeFile() }
            do {
                let result = try self.run(request, delegate: delegate, url: url)
                self.bytesDownloaded += delegate.received
                return result
            } catch {
                // What arrived stays: a retry continues from there.
                self.bytesDownloaded += delegate.received
                offset = delegate.length
                throw error
            }
        }
    }

    private func makeRequest(_ method: HTTPMethod, _ url: URL, headers: [(String, String)]) throws
        -> HTTPClient.Request
    {
        var request: HTTPClient.Request
        do { request = try HTTPClient.Request(url: url.absoluteString, method: method) } catch {
            throw ExchangeError.badLocation(url.absoluteString, reason: "\(error)")
        }
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        return request
    }

    private func run<Delegate: HTTPClientResponseDelegate>(
        _ request: HTTPClient.Request, delegate: Delegate, url: URL
    ) throws -> Delegate.Response {
        do {
            return try client.execute(request: request, delegate: delegate).futureResult.wait()
        } catch let error as ExchangeError {
            throw error
        } catch {
            throw ExchangeError.remoteFailed(url: Self.display(url), Self.fault(of: error, url: url))
        }
    }

    /// Runs `body`, again after `retryDelay`, twice that, … while it fails for a transient reason,
    /// `settings.retries` times at most.
    private func retrying<T>(_ url: URL, status: (T) -> Int, _ body: () throws -> T) throws -> T {
        var delay = settings.retryDelay
        var attempt = 0
        while true {
            do {
                let result = try body()
                guard Self.isTransient(status: status(result)), attempt < settings.retries else { return result }
            } catch ExchangeError.remoteFailed(let address, let fault) where fault.isTransient {
                guard attempt < settings.retries else { throw ExchangeError.remoteFailed(url: address, fault) }
            }
            attempt += 1
            Thread.sleep(forTimeInterval: delay)
            delay *= 2
        }
    }

    static func isTransient(status: Int) -> Bool {
        status >= 500 && RemoteFault.serverError(status: status).isTransient
    }

    /// The fault a response's status shows.
    func fault(_ response: Response, _ url: URL) -> ExchangeError {
        ExchangeError.remoteFailed(
            url: Self.display(url), Self.fault(status: response.status, response.headers, sent: authorization != nil))
    }

    static func fault(status: Int, _ headers: HTTPHeaders, sent: Bool) -> RemoteFault {
        switch status {
        case 401:
            // A login goes by Basic authentication: a server that offers only another scheme
            // (Digest, say) refuses it whatever the password.
            // Each challenge is a scheme's name, then its parameters (`realm="…"`, which may hold
            // any word); one header may hold several, separated by commas.
            let schemes = headers["WWW-Authenticate"].flatMap { $0.split(separator: ",") }.compactMap { piece in
                piece.split(separator: " ", maxSplits: 1).first.map(String.init).flatMap { $0.contains("=") ? nil : $0 }
            }
            if !schemes.isEmpty, !schemes.contains(where: { $0.lowercased() == "basic" }) {
                return .unsupportedAuthentication(schemes: schemes.joined(separator: ", "))
            }
            return .unauthorized(sentCredentials: sent)
        case 413: return .tooLarge
        case 403: return .forbidden
        case 404, 410: return .notFound
        // 405: PROPFIND not allowed there; 501: a server that does not know the method at all.
        case 405, 501: return .notWebDAV
        case 409, 412, 423: return .conflict(status: status)
        case 300..<400: return .redirected(status: status, to: headers.first(name: "Location"))
        case 500..<600: return .serverError(status: status)
        default: return .unexpectedStatus(status)
        }
    }

    /// The fault an error of the HTTP client shows.
    static func fault(of error: any Error, url: URL) -> RemoteFault {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded: return .timedOut
            case .remoteConnectionClosed, .cancelled: return .connectionLost
            default: break
            }
        }
        if error is TransferTooSlow { return .timedOut }
        if error is AnswerTooLarge { return .badResponse("the answer is larger than 64 MiB, more than any listing") }
        if let error = error as? NIOSSLError { return tlsFault(error, url: url) }
        if let error = error as? NIOSSLExtraError {
            if error == .failedToValidateHostname { return .certificateForAnotherHost(url.host ?? "this host") }
            return .untrustedCertificate("\(error)")
        }
        if let error = error as? IOError {
            return .unreachable(String(cString: strerror(error.errnoCode)).lowercased())
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return .timedOut
            case .ioOnClosedChannel, .outputClosed, .inputClosed, .eof: return .connectionLost
            default: return .unreachable("\(error)")
            }
        }
        if let error = error as? NIOConnectionError {
            if let dns = error.dnsAAAAError ?? error.dnsAError {
                return .unreachable("cannot resolve the host (\(dns))")
            }
            if let first = error.connectionErrors.first { return fault(of: first.error, url: url) }
            return .unreachable("\(error)")
        }
        let text = "\(error)"
        if text.contains("connectionRefused") || text.contains("Connection refused") {
            return .unreachable("connection refused")
        }
        return .unreachable(text)
    }

    static func tlsFault(_ error: NIOSSLError, url: URL) -> RemoteFault {
        let text = "\(error)"
        if text.contains("CERTIFICATE_VERIFY_FAILED"), let host = url.host {
            return .untrustedCertificate(CertificateProbe.reason(host: host, port: url.port ?? 443))
        }
        // A server that answers in plain HTTP: its first bytes are no TLS record.
        if text.contains("WRONG_VERSION_NUMBER") || text.contains("HTTP_REQUEST") {
            return .tlsFailed("the server did not answer in TLS (it may serve plain http:// on this port)")
        }
        // The library's own text names source files of the build; keep the reason it gives.
        if let reason = text.range(of: #"error:[0-9A-F]+:[^:]*:[^:]*:([A-Z_]+)"#, options: .regularExpression) {
            return .tlsFailed(String(text[reason].split(separator: ":").last ?? "handshake failed"))
        }
        return .tlsFailed(text)
    }

    /// `url` as messages show it: without user or password.
    static func display(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(url)" }
        components.user = nil
        components.password = nil
        return components.string ?? "(url)"
    }
}
