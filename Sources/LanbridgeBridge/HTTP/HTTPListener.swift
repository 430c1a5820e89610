import Logging
import NIOConcurrencyHelpers
import NIOCore
import LanbridgeState
import Prometheus

/// What the console needs from the daemon, made once at start.
struct ConsoleParts: Sendable {
    let auth: ConsoleAuth
    let events: ConsoleEvents
    /// Replaced on SIGHUP, like the driver's.
    let settings: NIOLockedValueBox<BridgeSettings>
}

/// One bound HTTP listener and what it serves. Metrics and the console on the same address share
/// one listener; on different addresses each has its own, with `/healthz` on both.
struct HTTPListener {
    let channel: any Channel
    let host: String
    let port: Int
    let console: Bool

    static func bind(
        configuration: BridgeConfiguration, registry: PrometheusCollectorRegistry, driver: BridgeDriver,
        console: ConsoleParts?, logger: Logger
    ) async throws -> [HTTPListener] {
        var wanted: [(address: ListenAddress, metrics: Bool, console: Bool)] = []
        if let address = configuration.metrics { wanted.append((address, true, false)) }
        if let address = configuration.console, console != nil {
            if let shared = wanted.firstIndex(where: { $0.address == address }) { wanted[shared].console = true } else { wanted.append((address, false, true)) }
        }
        var bound: [HTTPListener] = []
        let refusals = HTTPRefusalLog()
        do {
            for want in wanted {
                var services: [any HTTPService] = [MonitoringService(registry: registry, driver: driver, metrics: want.metrics)]
                if want.console, let console {
                    services.append(
                        ConsoleService(
                            directory: configuration.stateDirectory, auth: console.auth, events: console.events,
                            settings: console.settings, driver: driver, bridgeName: configuration.name, logger: logger))
                }
                let channel: any Channel
                do {
                    channel = try await BindProblem.explaining(host: want.address.host, port: want.address.port) {
                        try await HTTPServer.bind(host: want.address.host, port: want.address.port, services: services, descriptors: driver.descriptors) { peer in
                            driver.metrics.httpRefused("peer_limit")
                            refusals.note(peer, logger: logger)
                        }
                    }
                } catch  where want.console && !want.metrics && configuration.consoleOptional {
                    logger.warning("console off: \(error) (choose another address with --ui-listen or ui.listen, or --no-ui)")
                    continue
                }
                let listener = HTTPListener(channel: channel, host: want.address.host, port: channel.localAddress?.port ?? want.address.port, console: want.console)
                let base = "http://\(ListenAddress.format(host: listener.host, port: listener.port))"
                if want.metrics { logger.info("metrics endpoint listening", metadata: ["metrics": "\(base)/metrics"]) }
                if want.console { logger.info("console listening (log in with `lanbridge ui`)", metadata: ["console": "\(base)/"]) }
                bound.append(listener)
            }
        } catch {
            for listener in bound { try? await listener.channel.close() }
            throw error
        }
        return bound
    }
}

/// Connections refused past a peer's bound: one log line a minute, with the count since.
final class HTTPRefusalLog: Sendable {
    private let state = NIOLockedValueBox<(count: Int, logged: NIODeadline)>((0, .distantPast))

    func note(_ peer: String, logger: Logger) {
        let due: Int? = state.withLockedValue { state in
            state.count += 1
            guard NIODeadline.now() - state.logged >= .minutes(1) else { return nil }
            let count = state.count
            state = (0, NIODeadline.now())
            return count
        }
        if let due {
            logger.warning(
                "HTTP listener: refused connections past a peer's bound of \(HTTPConnectionTable.Limits().perPeer)",
                metadata: ["peer": "\(peer)", "refused": "\(due)"])
        }
    }
}
