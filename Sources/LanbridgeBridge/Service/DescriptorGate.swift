import FoundationEssentials
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// `DescriptorLedger` behind a lock, shared by every listener's accept (the Noise listener, the
/// door for OpenClaw's apps, the canvas relay, the console and metrics, each on its own thread).
/// It closes what the ledger evicts, at once: a TLS connection sends its close_notify and does not
/// wait for the peer's (`DoorTLS`), so an evicted descriptor is free when the close returns.
final class DescriptorGate: Sendable {
    typealias Ticket = Int

    /// Descriptors kept out of the budget for the daemon's own work: state files, the gateway link
    /// (and, with OpenClaw's gateway, nothing more: each node's socket there is counted with it),
    /// Avahi, the control socket and its clients, a hook's pipes, the store's `DescriptorReserve`.
    static let reserve = DescriptorBudget.reserve

    private struct State {
        var ledger: DescriptorLedger
        var channels: [Ticket: any Channel] = [:]
        var refused = 0
        var evicted = 0
        var loggedAt = Moment.distantPast
    }

    private let state: NIOLockedValueBox<State>
    private let metrics: BridgeMetrics
    private let logger: Logger

    init(capacity: Int, metrics: BridgeMetrics = .disabled, logger: Logger) {
        state = NIOLockedValueBox(State(ledger: DescriptorLedger(capacity: capacity)))
        (self.metrics, self.logger) = (metrics, logger)
    }

    /// The budget for this process: its open-file limit, less what is open already and the reserve.
    static func capacity(limit: Int) -> Int {
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 32
        return max(16, min(limit, 1 << 20) - open - reserve)
    }

    var capacity: Int { state.withLockedValue { $0.ledger.capacity } }
    var used: Int { state.withLockedValue { $0.ledger.used } }

    /// Admits `channel` for `peer` (`peer(of:)`), holding `cost` descriptors, or returns nil (the
    /// caller closes it). Its descriptors are given back when it closes.
    func admit(_ channel: any Channel, peer: String, cost: Int = 1) -> Ticket? {
        let (decision, evicted, summary) = state.withLockedValue { state -> (DescriptorLedger.Decision, [any Channel], String?) in
            let decision = state.ledger.admit(peer: peer, cost: cost)
            var evicted: [any Channel] = []
            switch decision {
            case let .admit(ticket, evicting):
                state.channels[ticket] = channel
                evicted = evicting.compactMap { state.channels.removeValue(forKey: $0) }
                state.evicted += evicted.count
            case .refuse:
                state.refused += 1
            }
            // One line a minute under a flood, with the counts since the last.
            let now = Moment.now
            guard decision == .refuse || !evicted.isEmpty, now.timeIntervalSince(state.loggedAt) >= 60 else { return (decision, evicted, nil) }
            defer { (state.loggedAt, state.refused, state.evicted) = (now, 0, 0) }
            return (
                decision, evicted,
                "the descriptor budget (\(state.ledger.capacity), the open-file limit less \(Self.reserve) for the daemon) is full: "
                    + "\(state.evicted) unproven connection(s) of the busiest peers closed to make room, \(state.refused) refused (counted since the last line)"
            )
        }
        if let summary { logger.warning("\(summary)") }
        for channel in evicted {
            metrics.admissionRefused("descriptorsEvicted")
            channel.close(promise: nil)
        }
        guard case let .admit(ticket, _) = decision else {
            metrics.admissionRefused("descriptors")
            return nil
        }
        channel.closeFuture.whenComplete { [state] _ in
            state.withLockedValue {
                $0.ledger.release(ticket)
                $0.channels[ticket] = nil
            }
        }
        return ticket
    }

    /// The connection showed it belongs: a paired key, a request waiting for the operator, a live capability.
    func prove(_ ticket: Ticket?) {
        guard let ticket else { return }
        state.withLockedValue { $0.ledger.prove(ticket) }
    }

    /// Whose connection this is, for the budget: an IPv4 address, an IPv6 /64 (one machine holds
    /// a whole /64), or the local user on loopback when the caller knows it.
    static func peer(of address: SocketAddress?, uid: UInt32? = nil) -> String {
        if let uid { return "uid:\(uid)" }
        guard let ip = address?.ipAddress else { return "unknown" }
        guard ip.contains(":"), !(ip.hasPrefix("::ffff:") && ip.contains(".")) else { return ip }
        return AddressPrefix(ip).description
    }
}
