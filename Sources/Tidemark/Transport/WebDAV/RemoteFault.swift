/// Why a request to a server failed, as `ExchangeError.remoteFailed` reports it with the URL.
public enum RemoteFault: Sendable, Equatable, CustomStringConvertible {
    /// No connection could be made (`reason`: refused, no such host, …).
    case unreachable(String)
    /// The server stopped answering for longer than the timeout.
    case timedOut
    /// The connection was closed before the request finished.
    case connectionLost
    /// 401: the server refused the credentials, or asked for some and the netrc file had none.
    case unauthorized(sentCredentials: Bool)
    /// 401 from a server that asks for an authentication scheme other than Basic (`schemes`, as
    /// its `WWW-Authenticate` headers name them), the only one Tidemark sends.
    case unsupportedAuthentication(schemes: String)
    /// 403: the credentials are not allowed to do this.
    case forbidden
    /// 404: no such file or collection.
    case notFound
    /// 405 on a listing: the URL is not served by WebDAV.
    case notWebDAV
    /// The URL names a file, not a collection.
    case notACollection
    /// 409, 412 or 423 where the exchange needed a name to be free, or a parent to exist.
    case conflict(status: Int)
    /// 5xx.
    case serverError(status: Int)
    /// 3xx: the server sends the client elsewhere, which an exchange never follows.
    case redirected(status: Int, to: String?)
    /// 413: the server takes no file this large (an upload limit of its own).
    case tooLarge
    /// Any other status.
    case unexpectedStatus(Int)
    /// The server's certificate is not trusted: `reason` says why (expired, not yet valid, signed
    /// by an unknown authority, issued for another name).
    case untrustedCertificate(String)
    /// The server's certificate, signed by a trusted authority, names other hosts than this one.
    case certificateForAnotherHost(String)
    /// The TLS handshake failed for another reason.
    case tlsFailed(String)
    /// The server's answer could not be understood.
    case badResponse(String)

    public var description: String {
        switch self {
        case .unreachable(let reason): return "cannot connect: \(reason)"
        case .timedOut: return "the server did not answer in time"
        case .connectionLost: return "the connection was closed before the transfer finished"
        case .unauthorized(let sent):
            return sent ? "the server refused the login and password (401)" : "the server asks for a login (401)"
        case .unsupportedAuthentication(let schemes):
            return "the server asks for \(schemes) authentication (401); only Basic is supported"
        case .forbidden: return "permission denied (403)"
        case .notFound: return "not found (404)"
        case .notWebDAV: return "not a WebDAV collection: the server does not take WebDAV requests there (405 or 501)"
        case .notACollection: return "is a file, not a collection"
        case .conflict(let status): return "the server refused the change (\(status))"
        case .serverError(let status): return "server error (\(status))"
        case .redirected(let status, let to):
            return "the server redirects (\(status))" + (to.map { " to \($0)" } ?? "")
        case .tooLarge: return "the server takes no file this large (413)"
        case .unexpectedStatus(let status): return "unexpected answer (\(status))"
        case .untrustedCertificate(let reason): return "untrusted certificate: \(reason)"
        case .certificateForAnotherHost(let host): return "the server's certificate is not for \(host)"
        case .tlsFailed(let reason): return "TLS failed: \(reason)"
        case .badResponse(let reason): return "unreadable answer: \(reason)"
        }
    }

    /// Whether trying again later may succeed without anyone changing anything.
    var isTransient: Bool {
        switch self {
        case .unreachable, .timedOut, .connectionLost: return true
        case .serverError(let status): return status != 501 && status != 505
        default: return false
        }
    }
}
