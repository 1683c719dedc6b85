import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Keeps a response's body in memory. Callbacks come from one event loop, one at a time.
final class CollectingDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = WebDAVClient.Response
    private var head: HTTPResponseHead?
    private var body = Data()
    private var floor: ProgressFloor

    static let cap = 64 << 20

    init(window: TimeInterval) { floor = ProgressFloor(window: window) }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        self.head = head
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard floor.admits(buffer.readableBytes) else { return task.eventLoop.makeFailedFuture(TransferTooSlow()) }
        // A listing is small: one past the cap is refused rather than parsed. An error page is
        // cut at the cap, and its status reported.
        if body.count < Self.cap {
            body.append(contentsOf: buffer.readableBytesView)
        } else if let code = head?.status.code, (200..<300).contains(code) {
            return task.eventLoop.makeFailedFuture(AnswerTooLarge())
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        Response(status: Int(head?.status.code ?? 0), headers: head?.headers ?? [:], body: body)
    }
}

/// Appends a successful response's body to a local file as it arrives (memory stays flat).
/// Callbacks come from one event loop, one at a time.
final class FileAppendingDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = (status: Int, length: Int64, total: Int64?)
    private let handle: FileHandle
    private var status = 0
    private var total: Int64?
    /// Bytes the file holds.
    private(set) var length: Int64
    /// Bytes of body received by this request.
    private(set) var received: Int64 = 0
    private var writing = false
    private var floor: ProgressFloor

    init(path: String, offset: Int64, window: TimeInterval) throws {
        floor = ProgressFloor(window: window)
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw ExchangeError.cannotWrite(path: path, reason: FileProblem.describe(path: path))
        }
        self.handle = handle
        length = offset
        try handle.truncate(atOffset: UInt64(offset))
        try handle.seek(toOffset: UInt64(offset))
    }

    func closeFile() { try? handle.close() }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = Int(head.status.code)
        if status == 206 {
            // Content-Range: bytes FIRST-LAST/TOTAL
            let range = head.headers.first(name: "Content-Range") ?? ""
            total = range.split(separator: "/").last.flatMap { Int64($0) }
            let first = range.split(separator: " ").last?.split(separator: "-").first.flatMap { Int64($0) }
            writing = first == length
            if !writing { status = 0 }
        } else if status == 200 {
            // The whole file: what the local copy held is replaced.
            length = 0
            try? handle.truncate(atOffset: 0)
            try? handle.seek(toOffset: 0)
            total = head.headers.first(name: "Content-Length").flatMap { Int64($0) }
            writing = true
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        guard floor.admits(buffer.readableBytes) else { return task.eventLoop.makeFailedFuture(TransferTooSlow()) }
        guard writing else { return task.eventLoop.makeSucceededVoidFuture() }
        do {
            try handle.write(contentsOf: Data(buffer.readableBytesView))
            length += Int64(buffer.readableBytes)
            received += Int64(buffer.readableBytes)
            return task.eventLoop.makeSucceededVoidFuture()
        } catch {
            return task.eventLoop.makeFailedFuture(error)
        }
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response { (status, length, total) }
}

/// A response's body arriving slower than `ProgressFloor` allows.
struct TransferTooSlow: Error {}

/// A successful answer kept in memory grew past `CollectingDelegate.cap`.
struct AnswerTooLarge: Error {}

/// Fails a response whose body trickles: fewer than 1 KiB in a window of the read timeout, counted
/// from its first bytes. The client's read timeout starts again at every byte, so a server that
/// sends one now and then would otherwise hold a request, and the command, for as long as it likes.
struct ProgressFloor {
    let window: Duration
    static let minimum = 1024
    private var start: ContinuousClock.Instant?
    private var bytes = 0

    init(window: TimeInterval) { self.window = .milliseconds(Int64(window * 1000)) }

    /// Counts `count` bytes that arrived; false once a window ended with fewer than the minimum.
    mutating func admits(_ count: Int) -> Bool {
        let now = ContinuousClock.now
        bytes += count
        guard let start else {
            self.start = now
            return true
        }
        guard now - start >= window else { return true }
        defer { (self.start, bytes) = (now, 0) }
        return bytes >= Self.minimum
    }
}
