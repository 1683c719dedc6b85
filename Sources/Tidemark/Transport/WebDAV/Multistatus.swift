import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The answer to a `PROPFIND` (RFC 4918 §9.1): one response per resource, with the properties an
/// exchange reads.
struct Multistatus {
    struct Resource {
        /// The resource's path, percent-decoded, without a trailing slash.
        var path: String
        var isCollection = false
        var size: Int64?
        var modified: Date?
        var etag: String?
        /// Whether its properties were found (status 200 in a propstat).
        var found = true
    }

    var resources: [Resource]

    /// Parses a 207 body; throws `badResponse` for anything else.
    init(_ data: Data, url: String) throws {
        let delegate = ParserDelegate()
        let parser = XMLParser(data: data)
        parser.shouldProcessNamespaces = true
        parser.delegate = delegate
        guard parser.parse() else {
            // Where, rather than Foundation's error text, which says little ("Code=1 (null)").
            throw ExchangeError.remoteFailed(
                url: url,
                .badResponse("the listing is not valid XML (line \(parser.lineNumber), column \(parser.columnNumber))"))
        }
        resources = delegate.resources
    }

    /// `href` (an absolute path or URL, percent-encoded) as a decoded path without trailing slash.
    static func path(of href: String) -> String {
        var path = href.trimmingCharacters(in: .whitespacesAndNewlines)
        if let url = URL(string: path), url.scheme != nil { path = url.path(percentEncoded: true) }
        path = path.removingPercentEncoding ?? path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    static let dateFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter
    }()
}

/// Collects `response` elements; only the DAV: namespace is read.
private final class ParserDelegate: NSObject, XMLParserDelegate {
    var resources: [Multistatus.Resource] = []
    private var current: Multistatus.Resource?
    private var text = ""
    private var propstat: (isCollection: Bool, size: Int64?, modified: Date?, etag: String?, ok: Bool)?
    private var any200 = false

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        guard namespaceURI == "DAV:" else { return }
        text = ""
        switch name {
        case "response":
            current = Multistatus.Resource(path: "")
            any200 = false
        case "propstat": propstat = (false, nil, nil, nil, false)
        case "collection": propstat?.isCollection = true
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard namespaceURI == "DAV:" else { return }
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch name {
        case "href" where propstat == nil: current?.path = Multistatus.path(of: value)
        case "getcontentlength": propstat?.size = Int64(value)
        case "getlastmodified": propstat?.modified = Multistatus.dateFormatter.date(from: value)
        case "getetag": propstat?.etag = value.isEmpty ? nil : value
        case "status" where propstat != nil: propstat?.ok = value.split(separator: " ").dropFirst().first == "200"
        case "propstat":
            if let found = propstat, found.ok, var resource = current {
                any200 = true
                if found.isCollection { resource.isCollection = true }
                resource.size = found.size ?? resource.size
                resource.modified = found.modified ?? resource.modified
                resource.etag = found.etag ?? resource.etag
                current = resource
            }
            propstat = nil
        case "response":
            if var resource = current, !resource.path.isEmpty {
                resource.found = any200
                resources.append(resource)
            }
            current = nil
        default: break
        }
        text = ""
    }
}
