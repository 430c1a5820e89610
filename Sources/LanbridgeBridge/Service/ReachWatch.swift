import LanbridgeCore
import LanbridgeNet
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Where devices should dial, kept current (issue 61 §5): a DHCP renewal that moves the host's
/// address left `welcome.addresses`, status and every invite and setup code naming the dead one
/// until a restart. Every `interval` the host's interfaces are read again (one getifaddrs); when
/// the reachable list changes, the core has it at once (runtime.json, `welcome`, invites) and the
/// log says so. mDNS needs nothing: the service names the host, whose address records
/// avahi-daemon keeps in step with the interfaces itself.
enum ReachWatch {
    static let interval = TimeAmount.seconds(5)

    /// `reachable`: the list as computed at start.
    static func start(
        on loop: any EventLoop, listening: [String], reachable: [String], compute: @escaping @Sendable () -> [String], driver: BridgeDriver,
        logger: Logger
    ) -> RepeatedTask {
        let last = NIOLockedValueBox(reachable)
        return loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let now = compute()
            let was = last.withLockedValue { last in
                defer { last = now }
                return last
            }
            guard now != was else { return }
            logger.info(
                "the host's addresses changed: devices are now told to dial \(now.isEmpty ? "nothing (no address)" : now.joined(separator: ", "))",
                metadata: ["was": "\(was.joined(separator: ", "))"])
            driver.submit(.listening(listening, reachable: now), order: .inOrder)
        }
    }
}
