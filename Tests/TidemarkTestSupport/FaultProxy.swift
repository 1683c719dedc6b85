import Foundation

/// `tools/webdav-fault-proxy.py` in front of a server: forwards every request, and injects the
/// faults a test sets (a status, a dropped request or response, a delay).
public final class FaultProxy: @unchecked Sendable {  // @unchecked: immutable after init.
    public let url: String
    private let process: ChildProcess
    private let port: Int

    public init(upstream: WebDAVServer) throws {
        let upstreamPort = Int(URL(string: upstream.url)!.port!)
        var script = URL(fileURLWithPath: #filePath)
        while !FileManager.default.fileExists(atPath: script.appendingPathComponent("tools/webdav-fault-proxy.py").path)
        {
            script.deleteLastPathComponent()
            guard script.path != "/" else {
                throw WebDAVServer.ServerError.failed("tools/webdav-fault-proxy.py not found")
            }
        }
        process = try ChildProcess(
            "/usr/bin/python3",
            [script.appendingPathComponent("tools/webdav-fault-proxy.py").path, String(upstreamPort)],
            stderr: .null)
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = process.nextOutput()
            if chunk.isEmpty { break }
            line += chunk
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw WebDAVServer.ServerError.failed("the fault proxy did not start") }
        self.port = port
        url = "http://127.0.0.1:\(port)/"
        try WebDAVServer.waitUntilListening(port, what: "the fault proxy")
    }

    deinit {
        // It keeps no state: killed at once.
        process.send(SIGKILL)
        _ = process.waitForExit(within: .seconds(5))
    }

    /// One fault: `action` is status, drop-request, drop-response, lose-answer, delay, trickle or
    /// refuse (see the script).
    public struct Rule: Encodable, Sendable {
        public var method: String
        public var path: String
        public var action: String
        public var times: Int
        public var status: Int?
        public var after: Int?
        public var seconds: Double?

        public init(
            _ action: String, method: String = "*", path: String = "", times: Int = 1, status: Int? = nil,
            after: Int? = nil, seconds: Double? = nil
        ) {
            self.action = action
            self.method = method
            self.path = path
            self.times = times
            self.status = status
            self.after = after
            self.seconds = seconds
        }
    }

    /// Replaces the faults to inject.
    public func inject(_ rules: [Rule]) throws {
        _ = try control("POST", "__faults", body: try JSONEncoder().encode(rules))
    }

    /// One forwarded request.
    public struct Forwarded: Decodable, Sendable {
        public var method: String
        public var path: String
        public var range: String?
        public var status: Int
        public var bytes: Int
    }

    /// The requests forwarded since the last `clearLog()`.
    public func forwarded() throws -> [Forwarded] {
        try JSONDecoder().decode([Forwarded].self, from: try control("GET", "__log"))
    }

    public func clearLog() throws { _ = try control("DELETE", "__log") }

    private func control(_ method: String, _ path: String, body: Data? = nil) throws -> Data {
        // A plain socket exchange: the test's own HTTP client is the thing under test.
        guard let descriptor = WebDAVServer.connectToLoopback(port) else {
            throw WebDAVServer.ServerError.failed("cannot reach the fault proxy")
        }
        defer { close(descriptor) }
        let payload = body ?? Data()
        let request =
            Data(
                "\(method) /\(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(payload.count)\r\nConnection: close\r\n\r\n"
                    .utf8) + payload
        _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        var response = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            response.append(contentsOf: buffer[0..<count])
        }
        guard let split = response.range(of: Data("\r\n\r\n".utf8)) else { return Data() }
        return response[split.upperBound...]
    }
}
