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

/// The door as `lanbridge serve` starts it (its assembly is the door's own, not the server's).
extension OpenClawAppDoor {
    /// The front door for OpenClaw's apps (issue 38), if asked for: wss with the bridge's kept
    /// certificate (the canvas relay's), on each listen address or the one named. Plain ws only
    /// where the operator opted in, and never on an address that is not private.
    static func start(_ configuration: BridgeConfiguration, admission: Admission, driver: BridgeDriver, logger: Logger) async throws
        -> ([any Channel], AvahiPublisher.Extra?)
    {
        guard let apps = configuration.openClawApps else { return ([], nil) }
        let tls = apps.tls ? driver.doorTLS : nil
        let sha256 = tls?.served.sha256
        let options = OpenClawAppDoor.Options(
            tls: tls, idleTimeout: .seconds(75), maxFrameBytes: configuration.settings.limits.sessionMessageBytes,
            descriptorsEach: configuration.gateway?.wire == .openclaw ? 2 : 1)
        var bound: [any Channel] = []
        var port = apps.listen.port
        do {
            let hosts = apps.listen.host.map { [$0] } ?? configuration.listen.map(\.host)
            for (index, host) in hosts.enumerated() {
                if !apps.tls, (try? CanvasURL("http://\(host.contains(":") ? "[\(host)]" : host)/")).flatMap({ $0.host }).map(CanvasURLPolicy.localReason) == .some(nil) {
                    logger.error("OpenClaw apps: not listening with plain ws:// on \(host), which is not a private address")
                    continue
                }
                let listener = min(index, configuration.listen.count - 1)
                let channel = try await BindProblem.explaining(host: host, port: port) {
                    try await OpenClawAppDoor.bind(host: host, port: port, listener: listener, options: options, admission: admission, driver: driver, logger: logger)
                }
                bound.append(channel)
                if port == 0 { port = channel.localAddress?.port ?? 0 }
            }
        } catch {
            for channel in bound { try? await channel.close() }
            throw error
        }
        let listening = bound.compactMap(\.localAddress).map { ReachableAddress(host: $0.ipAddress ?? "?", port: $0.port ?? port).description }
        let urls = listening.map { "\(apps.tls ? "wss" : "ws")://\($0)" }
        driver.submit(.openClawApps(urls, tlsSha256: sha256), order: .now)
        logger.info(
            "OpenClaw apps door listening",
            metadata: [
                "openclawApps": "\(urls.joined(separator: ", "))",
                "sha256": "\(sha256 ?? "none (plain ws)")",
            ])
        // What OpenClaw's apps browse for (src/infra/bonjour.ts:152-210): iOS needs gatewayTls=1.
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "lanbridge"
        var txt = ["role=gateway", "transport=gateway", "gatewayPort=\(port)", "lanHost=\(host).local", "displayName=\(configuration.name)"]
        if let sha256 { txt += ["gatewayTls=1", "gatewayTlsSha256=\(sha256)"] }
        return (bound, AvahiPublisher.Extra(type: "_openclaw-gw._tcp", port: port, txt: txt))
    }
}
