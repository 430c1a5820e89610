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

/// SIGHUP, carried out: the plan (`ReloadPlan`, decided alone) applied to the running parts.
enum Reloading {
    /// SIGHUP: read the files again and apply what may change while running (access rules, limits
    /// but the transports' sizes, the gateway token); say what changed and what waits for a restart.
    static func apply(
        _ hangups: AsyncStream<Void>, reload: @Sendable () throws -> BridgeServer.Reloaded, from configuration: BridgeConfiguration,
        driver: BridgeDriver, console: ConsoleParts?, link: GatewayLink?, notifier: ServiceNotifier?,
        listening: String, logger: Logger
    ) async {
        var current = BridgeServer.Reloaded(settings: configuration.settings, gatewayToken: configuration.gateway?.token)
        for await _ in hangups {
            notifier?.reloading()
            defer { notifier?.ready(status: "listening on \(listening)") }
            do {
                let read = try reload()
                let plan = ReloadPlan(running: current.settings, token: current.gatewayToken, read: read.settings, token: read.gatewayToken)
                await driver.reload(plan.settings)
                console?.settings.withLockedValue { $0 = plan.settings }
                if let token = plan.newToken { link?.replaceToken(token) }
                logger.notice(plan.changes.isEmpty ? "reloaded: nothing changed" : "reloaded: \(plan.changes.joined(separator: ", ")) changed")
                for sentence in plan.afterRestart { logger.warning("\(sentence)") }
                current = BridgeServer.Reloaded(settings: plan.settings, gatewayToken: read.gatewayToken)
            } catch {
                logger.error("reload failed, keeping the running settings: \(error)")
            }
        }
    }
}
