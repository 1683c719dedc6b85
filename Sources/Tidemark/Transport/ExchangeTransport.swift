import Foundation

/// What an exchange folder is kept on: a local folder (`FolderTransport`) or a WebDAV collection
/// (`WebDAVTransport`). The exchange's logic (what to push and pull, snapshots, watermarks,
/// pruning) is written once against this, and a transport guarantees what Protocol/exchange.md §7
/// lists: listing, whole-file reads, publishing that never replaces, atomic replacement, removal.
///
/// A transport is made for one push, pull or prune, and `close()` ends it. Files are named by the
/// folder they are in (a replica id, or "" for the exchange folder itself) and their name.
protocol ExchangeTransport: AnyObject {
    /// Where the exchange folder is, as messages name it: a path, or a URL without credentials.
    var location: String { get }

    /// The names of the folders inside the exchange folder.
    func folders() throws -> [String]

    /// The files of `folder`, or none when it does not exist.
    func files(in folder: String) throws -> [ExchangeEntry]

    /// A local file holding `name`'s bytes from its start: all of them, or, with `prefix`, at least
    /// that many where the file has them. A local folder gives the file itself; a remote one gives a
    /// download, fetched once: a later call continues where an earlier one stopped.
    func localCopy(of name: String, in folder: String, prefix: Int?) throws -> ExchangeLocalCopy

    /// Creates `folder` inside the exchange folder if it does not exist.
    func createFolder(_ folder: String) throws

    /// A new local path to write a file that `publish` or `replace` then puts in `folder`.
    func temporaryFile(for folder: String) -> String

    /// Puts the complete file `temporary` in `folder` under the first of `name(0)`, `name(1)`, …
    /// that no file has, and returns that name. It never replaces a file, and a reader never sees
    /// part of it under its name. `temporary` is gone afterwards.
    func publish(_ temporary: String, in folder: String, as name: (Int) -> String) throws -> String

    /// Puts the complete file `temporary` in `folder` as `name`, replacing what is there: a reader
    /// sees the old file or the new one, never a mix. `temporary` is gone afterwards.
    func replace(_ name: String, in folder: String, with temporary: String) throws

    /// Removes `name` from `folder`; a file already gone is no error.
    func remove(_ name: String, in folder: String) throws

    /// Bytes fetched from a server so far (none for a local folder).
    var bytesDownloaded: Int64 { get }

    /// How messages name a file of the exchange.
    func address(of name: String, in folder: String) -> String

    /// Ends this use of the transport: connections close, downloads are removed.
    func close()
}

/// A file of an exchange folder, as a listing shows it.
struct ExchangeEntry: Sendable, Equatable {
    var name: String
    /// Its size in bytes, when the listing says.
    var size: Int64? = nil
    /// When it was last written, when the listing says.
    var modified: Date? = nil
    /// When its status last changed (a local file's inode change time, which a write or a change
    /// of its modification time moves on), when the listing says.
    var changed: Date? = nil
    /// For a file on a server, what tells whether it changed since it was read: its ETag, or its
    /// size and time. Nil for a local folder, whose files are read again at no cost.
    var validator: String? = nil
}

/// A local file that holds an exchange file's bytes from its start.
struct ExchangeLocalCopy: Sendable {
    var path: String
    /// Whether it holds the whole file.
    var complete: Bool
}

/// Options of the transports that reach a server (WebDAV): where credentials come from, which
/// certificate authorities to trust beyond the system's, and how hard to retry.
public struct ExchangeSettings: Sendable {
    /// The netrc file that holds credentials, by host; nil reads `$NETRC`, or `~/.netrc`.
    public var netrcPath: String?
    /// A PEM file of certificate authorities to trust in addition to the system's.
    public var caFile: String?
    /// Whether `http://` URLs of hosts other than the loopback are allowed (credentials and files
    /// then cross the network in clear).
    public var allowInsecureHTTP: Bool
    /// Seconds to wait for each read or write of a request to make progress.
    public var timeout: Double
    /// Seconds to keep trying to connect to a server that does not answer or refuses.
    public var connectTimeout: Double
    /// How many times a request that failed for a transient reason (unreachable server, timeout,
    /// dropped connection, 5xx) is tried again, waiting `retryDelay`, then twice that, and so on.
    public var retries: Int
    /// Seconds before the first retry.
    public var retryDelay: Double

    public init(
        netrcPath: String? = nil, caFile: String? = nil, allowInsecureHTTP: Bool = false, timeout: Double = 30,
        connectTimeout: Double = 5, retries: Int = 2, retryDelay: Double = 0.5
    ) {
        self.connectTimeout = connectTimeout
        self.netrcPath = netrcPath
        self.caFile = caFile
        self.allowInsecureHTTP = allowInsecureHTTP
        self.timeout = timeout
        self.retries = retries
        self.retryDelay = retryDelay
    }
}

enum ExchangeLocation {
    /// Whether `location` names a server (a URL) rather than a local folder.
    static func isURL(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// The transport for `location`: a WebDAV collection for an `http(s)://` URL, else a local folder.
    static func transport(for location: String, settings: ExchangeSettings) throws -> any ExchangeTransport {
        if isURL(location) { return try WebDAVTransport(url: location, settings: settings) }
        return try FolderTransport(location)
    }

    /// How this replica records `location`: an absolute path, or the URL as normalized. Every
    /// location a command is given is recorded first, so a URL of another scheme is refused here.
    static func key(_ location: String) throws -> String {
        if isURL(location) { return try WebDAVTransport.normalized(location).absoluteString }
        try checkNoOtherScheme(location)
        return URL(fileURLWithPath: location).standardizedFileURL.path
    }

    /// Refuses a URL of another scheme (`davs://`, `ftp://`, `s3://`…), which would otherwise be
    /// taken for a relative folder path of that name.
    private static func checkNoOtherScheme(_ location: String) throws {
        guard let separator = location.range(of: "://") else { return }
        let scheme = location[..<separator.lowerBound]
        guard let first = scheme.first, first.isLetter,
            scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+.-".contains($0) })
        else { return }
        let advice =
            ["dav", "davs", "webdav", "webdavs"].contains(scheme.lowercased())
            ? "; for a WebDAV server, give its https:// URL (or http://)" : ""
        throw ExchangeError.badLocation(
            location,
            reason:
                "\(scheme):// is not supported: an exchange is a local folder or a WebDAV server's http:// or https:// URL\(advice)"
        )
    }
}
