import LanbridgeFiles
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// The certificate both TLS doors serve, the canvas relay and the door for OpenClaw's apps (issue
/// 48 §4): one place, so `lanbridge canvas rotate-cert` reaches both at once, with the relay on or
/// off. Each new handshake takes the current one; what a connection was served is what it keeps
/// (an app's pending request records that one).
final class DoorTLS: Sendable {
    struct Served: Sendable {
        let context: NIOSSLContext
        /// SHA-256 of the certificate's DER, lowercase hex.
        let sha256: String
    }

    private let current: NIOLockedValueBox<Served>
    private let directory: StateDirectory

    init(directory: StateDirectory) throws {
        self.directory = directory
        current = NIOLockedValueBox(try Self.served(CanvasCertificate.loadOrCreate(directory: directory)))
    }

    var served: Served { current.withLockedValue { $0 } }

    /// A new key and certificate, kept, and served to every handshake from now on.
    func rotate() throws -> Served {
        let next = try Self.served(CanvasCertificate.rotate(directory: directory))
        current.withLockedValue { $0 = next }
        return next
    }

    private static func served(_ certificate: CanvasCertificate) throws -> Served {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate.certificate)], privateKey: .privateKey(certificate.key))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["http/1.1"]
        // A connection the bridge ends gives its descriptor back at once: its close_notify goes out,
        // and the peer's is not waited for (NIO's default waits 5 s, so a flood of refused or
        // evicted connections held thousands of descriptors past every bound; issue 48 §3).
        tls.shutdownTimeout = .zero
        return Served(context: try NIOSSLContext(configuration: tls), sha256: certificate.sha256)
    }
}
