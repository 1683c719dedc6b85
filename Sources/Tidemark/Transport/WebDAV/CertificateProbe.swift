import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Says why a server's certificate did not verify, where its dates tell: BoringSSL reports only
/// that verification failed, and "it expired on …" is what a user can act on. It connects again
/// without verifying, reads the leaf certificate's validity, and sends nothing.
enum CertificateProbe {
    static func reason(host: String, port: Int, now: Date = Date()) -> String {
        let fallback = "it is not signed by an authority this machine trusts, or it is for another host name"
        guard let certificate = leaf(host: host, port: port) else { return fallback }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        let notAfter = Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter))
        let notBefore = Date(timeIntervalSince1970: TimeInterval(certificate.notValidBefore))
        if notAfter < now { return "it expired on \(formatter.string(from: notAfter))" }
        if notBefore > now { return "it is not valid before \(formatter.string(from: notBefore))" }
        return fallback
    }

    /// The server's leaf certificate, or nil when none arrives within 5 s.
    private static func leaf(host: String, port: Int) -> NIOSSLCertificate? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let caught = Caught()
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let callback: NIOSSLCustomVerificationCallback = { chain, verdict in
                        caught.finish(chain.first)
                        verdict.succeed(NIOSSLVerificationResult.failed)
                    }
                    let handler = try NIOSSLClientHandler(
                        context: context, serverHostname: nil, customVerificationCallback: callback)
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        guard let channel = try? bootstrap.connect(host: host, port: port).wait() else { return nil }
        channel.closeFuture.whenComplete { _ in caught.finish(Optional<NIOSSLCertificate>.none) }
        defer { channel.close(promise: nil) }
        return caught.wait(seconds: 5)
    }

    /// The first certificate reported, once. Guarded by `lock`.
    private final class Caught: @unchecked Sendable {
        private let lock = NSLock()
        private let done = DispatchSemaphore(value: 0)
        private var certificate: NIOSSLCertificate?
        private var finished = false

        func finish(_ certificate: NIOSSLCertificate?) {
            lock.lock()
            defer { lock.unlock() }
            guard !finished else { return }
            finished = true
            self.certificate = certificate
            done.signal()
        }

        func wait(seconds: Double) -> NIOSSLCertificate? {
            guard done.wait(timeout: .now() + seconds) == .success else { return nil }
            lock.lock()
            defer { lock.unlock() }
            return certificate
        }
    }
}
