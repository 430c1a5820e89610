import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// What the wake hook is told (PROTOCOL.md §12.3): which node to wake, for which held command and
/// why it could not run. The driver adds the node's push registration, read from its 0600 file.
package struct WakeCall: Sendable, Equatable {
    package var hook: BridgeSettings.Hook
    package var node: Fingerprint
    package var displayName: String
    package var platform: String
    package var command: String
    /// The code the invoke would have failed with: NODE_BACKGROUND_UNAVAILABLE or NODE_NOT_CONNECTED.
    package var why: String
    package var holdMs: Int
    /// When the invoke was held: the hook's latency is counted from here.
    package var heldAt: Moment
}

/// When each node was last woken: at most one run per node per `intervalSeconds`.
/// Keyed by paired nodes only (a hold needs one), and entries past the interval are dropped as new
/// ones come, so the table never outgrows the nodes woken in the last interval.
package struct WakeSchedule {
    /// At most one run per node this often (not configurable: a phone is not woken more often).
    package static let intervalSeconds = 30.0
    private var last: [Fingerprint: Moment] = [:]

    /// True, and noted, when `node` may be woken now.
    package mutating func due(_ node: Fingerprint, now: Moment) -> Bool {
        let interval = Self.intervalSeconds
        last = last.filter { now.timeIntervalSince($0.value) < interval }
        guard last[node] == nil else { return false }
        last[node] = now
        return true
    }
}
