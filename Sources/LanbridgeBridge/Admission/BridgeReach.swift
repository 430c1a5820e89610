import LanbridgeDiscovery
import LanbridgeProtocol

/// Where devices should dial this bridge, best first, for invites and `welcome.addresses`
/// (PROTOCOL.md §9.1): the admin's `addresses`, then what the listeners make reachable.
public enum BridgeReach {
    /// `listen` on `port`: a wildcard listener makes every up interface's address reachable, a
    /// named one itself. Loopback counts only when nothing else is listened on (a test daemon).
    public static func addresses(
        listen: [BridgeConfiguration.Bind], port: Int, configured: [ReachableAddress],
        interfaces: [NetworkInterfaces.Address]
    ) -> [ReachableAddress] {
        let found = listen.flatMap { bind -> [ReachableAddress] in
            switch bind {
            case .lan: interfaces.filter { $0.isUp && !$0.isLoopback }.map { ReachableAddress(host: $0.address, port: port) }
            case .loopback: [ReachableAddress(host: "127.0.0.1", port: port)]
            case let .address(host): [ReachableAddress(host: host, port: port)]
            }
        }
        let preferred = ReachableAddress.preferred(configured: configured, found: found)
        return preferred.isEmpty ? Array(found.prefix(ReachableAddress.maxCount)) : preferred
    }
}
