import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real WebDAV server on the loopback, started for a test and stopped when released: Apache
/// httpd with mod_dav (an HTTP port, an HTTPS port with a certificate from a test CA, and an HTTPS
/// port whose certificate has expired), or `rclone serve webdav`. Both ask for Basic
/// authentication; `netrc` holds the right credentials, mode 0600.
// @unchecked: immutable after init; `process` is only signalled and polled.
public final class WebDAVServer: @unchecked Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case apache, rclone
    }

    public let kind: Kind
    public let directory: TemporaryDirectory
    /// The folder the server serves.
    public let root: String
    /// `http://127.0.0.1:PORT/`
    public let url: String
    /// Apache only: the HTTPS URL, its CA's certificate (PEM), and a URL whose certificate expired.
    public let httpsURL: String?
    public let caFile: String?
    public let expiredURL: String?
    /// A netrc file with the server's login and password.
    public let netrc: String
    public static let login = "tidemark-test"
    /// The password: tests check it never appears in any output.
    public let password = "pw-\(UUID().uuidString.prefix(12))"
    private let process: ChildProcess
    private let log: String

    /// Whether the server's program is installed (`.ci/run` installs both).
    public static func isInstalled(_ kind: Kind) -> Bool {
        switch kind {
        case .apache:
            return ["/usr/sbin/apache2", "/usr/bin/htpasswd", "/usr/bin/openssl"].allSatisfy {
                FileManager.default.isExecutableFile(atPath: $0)
            }
        case .rclone: return FileManager.default.isExecutableFile(atPath: "/usr/bin/rclone")
        }
    }

    /// Whether both servers and the fault proxy's interpreter are installed.
    public static var allInstalled: Bool {
        Kind.allCases.allSatisfy(isInstalled) && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    }

    public init(_ kind: Kind) throws {
        self.kind = kind
        directory = try TemporaryDirectory("tidemark-webdav")
        root = directory.file("files")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        netrc = directory.file("netrc")
        log = directory.file("server.log")
        try "machine 127.0.0.1 login \(Self.login) password \(password)\n".write(
            toFile: netrc, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: netrc)
        if kind == .apache {
            try Certificates.make(in: directory.path)
            try Self.runTool("/usr/bin/htpasswd", ["-bc", directory.file("htpasswd"), Self.login, password])
            // Apache started as root serves as `nobody`, which must be able to write the files.
            if getuid() == 0 {
                for path in [directory.path, root] { chmod(path, 0o777) }
            }
        }
        let (process, ports) = try Self.start(kind, in: directory, root: root, password: password, log: log)
        self.process = process
        url = "http://127.0.0.1:\(ports[0])/"
        switch kind {
        case .apache:
            httpsURL = "https://127.0.0.1:\(ports[1])/"
            expiredURL = "https://127.0.0.1:\(ports[2])/"
            caFile = directory.file("ca.pem")
        case .rclone:
            httpsURL = nil
            caFile = nil
            expiredURL = nil
        }
    }

    /// Starts the server on ports free a moment before, and waits until it listens. Another process
    /// can bind one of them in that moment (a parallel test's server or an outgoing connection):
    /// the server then exits at once, and it is started again on other ports, three times at most.
    private static func start(
        _ kind: Kind, in directory: TemporaryDirectory, root: String, password: String, log: String
    ) throws -> (ChildProcess, [Int]) {
        for attempt in 1...3 {
            let ports = try freePorts(kind == .apache ? 3 : 1)
            let command: (String, [String])
            switch kind {
            case .apache:
                try apacheConfiguration(in: directory, root: root, http: ports[0], https: ports[1], expired: ports[2])
                    .write(toFile: directory.file("httpd.conf"), atomically: false, encoding: .utf8)
                command = ("/usr/sbin/apache2", ["-f", directory.file("httpd.conf"), "-DFOREGROUND"])
            case .rclone:
                command = (
                    "/usr/bin/rclone",
                    [
                        "serve", "webdav", root, "--addr", "127.0.0.1:\(ports[0])", "--user", login, "--pass",
                        password, "--config", directory.file("rclone.conf"),
                    ]
                )
            }
            let process = try ChildProcess(command.0, command.1, stdout: .file(log), stderr: .standardOutput)
            if try waitUntilListening(ports[0], what: "\(kind) (log: \(log))", unlessEnded: process) {
                return (process, ports)
            }
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            guard attempt < 3 else {
                throw ServerError.failed("\(kind) exited before listening, three times; its last words: \(said)")
            }
        }
        preconditionFailure("unreachable: the last attempt returns or throws")
    }

    deinit { stop() }

    /// Stops the server and every process it left (Apache's workers keep serving open connections
    /// after their parent is gone). It keeps no state a test needs: killed at once.
    public func stop() {
        process.send(SIGKILL)
        _ = process.waitForExit(within: .seconds(5))
        Self.killAll(mentioning: directory.path)
    }

    /// Sends SIGKILL to every process whose command line mentions `text` (Linux: /proc).
    static func killAll(mentioning text: String) {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in processes {
            guard let pid = Int32(entry),
                let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: line, as: UTF8.self).contains(text)
            else { continue }
            kill(pid, SIGKILL)
        }
    }

    private static func apacheConfiguration(
        in directory: TemporaryDirectory, root: String, http: Int, https: Int, expired: Int
    ) -> String {
        let modules = "/usr/lib/apache2/modules"
        let d = directory.path
        return """
            ServerRoot \(d)
            ServerName 127.0.0.1
            PidFile \(d)/httpd.pid
            ErrorLog \(d)/error.log
            LogLevel error
            Listen 127.0.0.1:\(http)
            Listen 127.0.0.1:\(https)
            Listen 127.0.0.1:\(expired)
            LoadModule mpm_event_module \(modules)/mod_mpm_event.so
            LoadModule authz_core_module \(modules)/mod_authz_core.so
            LoadModule authn_core_module \(modules)/mod_authn_core.so
            LoadModule authn_file_module \(modules)/mod_authn_file.so
            LoadModule auth_basic_module \(modules)/mod_auth_basic.so
            LoadModule authz_user_module \(modules)/mod_authz_user.so
            LoadModule dav_module \(modules)/mod_dav.so
            LoadModule dav_fs_module \(modules)/mod_dav_fs.so
            LoadModule ssl_module \(modules)/mod_ssl.so
            \(getuid() == 0 ? "User nobody\nGroup nogroup" : "")
            DAVLockDB \(d)/davlock
            DocumentRoot \(root)
            <VirtualHost 127.0.0.1:\(https)>
              SSLEngine on
              SSLCertificateFile \(d)/server.pem
              SSLCertificateKeyFile \(d)/server.key
            </VirtualHost>
            <VirtualHost 127.0.0.1:\(expired)>
              SSLEngine on
              SSLCertificateFile \(d)/expired.pem
              SSLCertificateKeyFile \(d)/server.key
            </VirtualHost>
            <Directory \(root)>
              Dav On
              AuthType Basic
              AuthName "tidemark"
              AuthUserFile \(d)/htpasswd
              Require valid-user
            </Directory>

            """
    }

    /// A TCP port nobody listens on now.
    public static func freePort() throws -> Int { try freePorts(1)[0] }

    /// `count` distinct TCP ports nobody listens on now: each is held until all are chosen.
    static func freePorts(_ count: Int) throws -> [Int] {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        return try (0..<count).map { _ in
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw ServerError.failed("socket: errno \(errno)") }
            descriptors.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
                }
            }
            guard bound else { throw ServerError.failed("bind: errno \(errno)") }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }

    /// Waits (30 s at most) until something accepts connections on `port`.
    public static func waitUntilListening(_ port: Int, what: String) throws {
        guard try waitUntilListening(port, what: what, unlessEnded: nil) else {
            throw ServerError.failed("\(what) exited before listening on 127.0.0.1:\(port)")
        }
    }

    /// Waits (30 s at most) until something accepts connections on `port`: true when it does,
    /// false as soon as `process` has ended without that.
    static func waitUntilListening(_ port: Int, what: String, unlessEnded process: ChildProcess?) throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let descriptor = connectToLoopback(port) {
                close(descriptor)
                return true
            }
            if process?.hasExited == true { return false }
            usleep(50_000)
        }
        throw ServerError.failed("\(what) did not listen on 127.0.0.1:\(port) within 30 s")
    }

    /// A socket connected to 127.0.0.1:`port`, or nil when nothing accepts there.
    static func connectToLoopback(_ port: Int) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if connected { return descriptor }
        close(descriptor)
        return nil
    }

    static func runTool(_ path: String, _ arguments: [String], in directory: String? = nil) throws {
        let process = try ChildProcess(path, arguments, directory: directory, stdout: .null)
        let message = process.readErrors()
        guard process.waitForExit() == .exited(0) else {
            throw ServerError.failed(
                "\(path) \(arguments.joined(separator: " ")): \(String(decoding: message, as: UTF8.self))")
        }
    }

    public enum ServerError: Error, CustomStringConvertible {
        case failed(String)
        public var description: String {
            switch self {
            case .failed(let why): return why
            }
        }
    }
}

/// A test CA, a server certificate it signed for 127.0.0.1 and localhost, and one that expired.
enum Certificates {
    static func make(in directory: String) throws {
        let openssl = "/usr/bin/openssl"
        func run(_ arguments: [String]) throws { try WebDAVServer.runTool(openssl, arguments, in: directory) }
        try run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=Tidemark test CA",
        ])
        try run([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=127.0.0.1",
        ])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(
            toFile: directory + "/ext.cnf", atomically: false, encoding: .utf8)
        try run([
            "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "server.pem", "-days", "2", "-extfile", "ext.cnf",
        ])
        // `openssl ca` is the tool that takes explicit validity dates: the same key, valid in 2020 only.
        try FileManager.default.createDirectory(atPath: directory + "/ca", withIntermediateDirectories: true)
        try "".write(toFile: directory + "/ca/index.txt", atomically: false, encoding: .utf8)
        try "1000\n".write(toFile: directory + "/ca/serial", atomically: false, encoding: .utf8)
        try """
        [ca]
        default_ca = test
        [test]
        dir = ./ca
        database = ./ca/index.txt
        serial = ./ca/serial
        new_certs_dir = ./ca
        default_md = sha256
        policy = anything
        copy_extensions = none
        [anything]
        commonName = supplied
        [server]
        subjectAltName = IP:127.0.0.1,DNS:localhost

        """.write(toFile: directory + "/ca.cnf", atomically: false, encoding: .utf8)
        try run([
            "ca", "-batch", "-config", "ca.cnf", "-extensions", "server", "-cert", "ca.pem", "-keyfile", "ca.key",
            "-in", "server.csr", "-out", "expired.pem", "-startdate", "20200101000000Z", "-enddate", "20200201000000Z",
            "-notext",
        ])
    }
}
