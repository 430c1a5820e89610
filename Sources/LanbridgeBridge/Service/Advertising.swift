import FoundationEssentials
import LanbridgeCrypto
import LanbridgeCore
import LanbridgeDiscovery
import LanbridgeNet
import LanbridgeStores
import LanbridgeTransport
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Prometheus

/// The mDNS advertisement of `_lanbridge._tcp` (and the extras, such as OpenClaw's), its status
/// told to the core.
enum Advertising {
    /// Starts advertising, unless turned off. A missing avahi-daemon is a warning, never a reason not to serve.
    static func start(
        _ configuration: BridgeConfiguration, port: Int, fingerprint: Fingerprint, extras: [AvahiPublisher.Extra] = [],
        driver: BridgeDriver, logger: Logger
    ) -> AvahiPublisher? {
        guard configuration.mdns else {
            driver.submit(.advertising("off", name: nil), order: .now)
            return nil
        }
        // On the first listener's interface: the LAN comes first (tailnets carry no multicast).
        var interface: Int32?
        if case let .address(address) = configuration.listen[0] {
            interface = NetworkInterfaces.index(of: address)
            if interface == nil { logger.warning("no interface carries \(address); advertising on all of them") }
        } else if configuration.listen[0] == .loopback {
            interface = NetworkInterfaces.index(of: "127.0.0.1")
        }
        do {
            let publisher = try AvahiPublisher(
                name: configuration.name, port: port,
                advertisement: BridgeAdvertisement(shortFingerprint: fingerprint.short, name: configuration.name),
                interfaceIndex: interface, logger: logger)
            publisher.extras = extras
            publisher.onStatus = { status in
                switch status {
                case .waitingForDaemon: driver.submit(.advertising("waiting for avahi-daemon", name: nil), order: .now)
                case let .registering(name): driver.submit(.advertising("registering", name: name), order: .now)
                case let .published(name): driver.submit(.advertising("published", name: name), order: .now)
                case let .failed(why): driver.submit(.advertising("failed: \(why)", name: nil), order: .now)
                }
            }
            try publisher.start()
            return publisher
        } catch {
            logger.warning("mDNS advertising unavailable (\(error)); nodes can still connect by address")
            driver.submit(.advertising("failed: \(error)", name: nil), order: .now)
            return nil
        }
    }
}
