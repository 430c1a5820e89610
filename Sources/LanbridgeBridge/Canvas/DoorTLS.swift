import LanbridgeFiles
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

/// The certificate both TLS doors serve, the canvas relay and the door for OpenClaw's apps (issue
/// 48 §4): one place, so `lanbridge canvas rotate-cert` reaches both at once, with the relay on or
/// off. Each new handshake takes the current one; what a connection was served is what it keeps
/// (an app's pending request records that one).
///
/// The relay has a context of its own (`relayContext`): a browser node's canvas frame reaches the
/// relay by one of the browser door's names (SNI), and gets the browser door's certificate, which
/// its browser trusts; everything else (native nodes dial an address, which sends no SNI) gets the
/// kept one, as pinned. The app door never does: OpenClaw's apps pin the kept one by name too.
final class DoorTLS: Sendable {
    struct Served: Sendable {
        let context: NIOSSLContext
        /// For the canvas relay: the same, but a browser door's name (SNI) gets that door's certificate.
        let relayContext: NIOSSLContext
        /// SHA-256 of the certificate's DER, lowercase hex.
        let sha256: String
    }

    private let current: NIOLockedValueBox<Served>
    private let directory: StateDirectory
    /// The browser door's certificate, once the door is up (issue 64).
    private let browser: NIOLockedValueBox<BrowserTLS?>

    init(directory: StateDirectory) throws {
        self.directory = directory
        let browser = NIOLockedValueBox<BrowserTLS?>(nil)
        self.browser = browser
        current = NIOLockedValueBox(try Self.served(CanvasCertificate.loadOrCreate(directory: directory), browser: browser))
    }

    /// From now on the relay answers the browser door's names with its certificate.
    func serveBrowsers(_ tls: BrowserTLS) { browser.withLockedValue { $0 = tls } }

    var served: Served { current.withLockedValue { $0 } }

    /// A new key and certificate, kept, and served to every handshake from now on.
    func rotate() throws -> Served {
        let next = try Self.served(CanvasCertificate.rotate(directory: directory), browser: browser)
        current.withLockedValue { $0 = next }
        return next
    }

    private static func served(_ certificate: CanvasCertificate, browser: NIOLockedValueBox<BrowserTLS?>) throws -> Served {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate.certificate)], privateKey: .privateKey(certificate.key))
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["http/1.1"]
        // A connection the bridge ends gives its descriptor back at once: its close_notify goes out,
        // and the peer's is not waited for (NIO's default waits 5 s, so a flood of refused or
        // evicted connections held thousands of descriptors past every bound; issue 48 §3).
        tls.shutdownTimeout = .zero
        var relay = tls
        relay.sslContextCallback = { hello, promise in
            guard let name = hello.serverHostname?.lowercased(), let door = browser.withLockedValue({ $0 }), door.covers(name) else {
                return promise.succeed(.noChanges)
            }
            let served = door.served
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = served.chain.map { .certificate($0) }
            override.privateKey = .privateKey(served.key)
            promise.succeed(override)
        }
        return Served(context: try NIOSSLContext(configuration: tls), relayContext: try NIOSSLContext(configuration: relay), sha256: certificate.sha256)
    }
}
