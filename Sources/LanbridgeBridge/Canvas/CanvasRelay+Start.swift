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

/// The relay as `lanbridge serve` starts it (its assembly is the door's own, not the server's).
extension CanvasRelay {
    /// The canvas relay, if configured: its certificate (made once), its listeners, and the core
    /// told where it is. Its failure to start stops the daemon only if the admin chose its address.
    static func start(_ configuration: BridgeConfiguration, driver: BridgeDriver, logger: Logger) async throws
        -> (CanvasRelay?, [any Channel])
    {
        guard let canvas = configuration.canvas else { return (nil, []) }
        var relay: CanvasRelay?
        var bound: [any Channel] = []
        do {
            guard let tls = driver.doorTLS else {
                throw CanvasCertificate.Problem(description: "\(CanvasCertificate.fileName) is unreadable; `lanbridge canvas rotate-cert` makes a new one")
            }
            let made = CanvasRelay(
                .init(
                    tls: tls, upstream: canvas.upstream, limits: configuration.settings.limits,
                    upstreamNeedsCapability: canvas.openClaw), driver: driver, logger: logger)
            relay = made
            var port = canvas.listen.port
            for host in canvas.listen.host.map({ [$0] }) ?? configuration.listen.map(\.host) {
                let channel = try await BindProblem.explaining(host: host, port: port) { try await made.bind(host: host, port: port) }
                bound.append(channel)
                if port == 0 { port = channel.localAddress?.port ?? 0 }
            }
            let listening = bound.compactMap { $0.localAddress }.map { ReachableAddress(host: $0.ipAddress ?? "?", port: $0.port ?? port).description }
            let origins = CanvasRelayInfo.origins(of: canvas.upstream)
            let sha256 = tls.served.sha256
            await driver.setCanvas(
                made, CanvasRelayInfo(port: port, tlsSha256: sha256, upstreamOrigins: origins),
                status: RuntimeStatus.Canvas(listening: listening, tlsSha256: sha256, upstream: canvas.upstream.description))
            logger.info(
                "canvas relay listening",
                metadata: [
                    "canvas": "\(listening.joined(separator: ", "))", "upstream": "\(canvas.upstream)",
                    "sha256": "\(sha256)",
                ])
        } catch {
            for channel in bound { channel.close(promise: nil) }
            await relay?.stop()
            if canvas.optional {
                logger.warning("canvas relay off: \(error) (choose another port with --canvas-listen or canvas.listen, or --no-canvas)")
                return (nil, [])
            }
            throw error
        }
        return (relay, bound)
    }
}
