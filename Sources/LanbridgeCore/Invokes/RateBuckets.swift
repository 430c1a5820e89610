import LanbridgeProtocol
import LanbridgeState

/// Per-node token buckets for each rate limit; each bucket holds a fifth of its minute's
/// allowance. Keyed by paired node (a connection proves its key before it can spend), so the table
/// is bounded by the paired nodes; a reload empties it, so rates refill under the new limits.
package struct RateBuckets {
    package enum Limit: Hashable { case snapshot, agent, systemEvent, event, eventBytes, state, canvasRequest }

    private struct Key: Hashable {
        package let limit: Limit
        package let node: Fingerprint
    }
    private var buckets: [Key: TokenBucket] = [:]

    /// `count` tokens (one by default) from the node's bucket for `limit`.
    package mutating func take(_ limit: Limit, node: Fingerprint, count: Int = 1, limits: BridgeSettings.Limits, now: Moment) -> TokenBucket.TakeResult {
        let perMinute =
            switch limit {
            case .snapshot: limits[.snapshotsPerMinute]
            case .agent: limits[.agentPerMinute]
            case .systemEvent: limits[.systemEventsPerMinute]
            case .event: limits[.eventsPerMinute]
            case .eventBytes: limits[.eventBytesPerMinute]
            case .state: limits[.statesPerMinute]
            case .canvasRequest: limits[.canvasRequestsPerMinute]
            }
        let key = Key(limit: limit, node: node)
        var bucket = buckets[key] ?? TokenBucket(capacity: max(Double(count), Double(perMinute) / 5), perSecond: Double(perMinute) / 60, now: now)
        let result = bucket.take(Double(count), now: now)
        buckets[key] = bucket
        return result
    }

    package mutating func removeAll() { buckets.removeAll() }

    /// A node unpaired: its buckets go with it.
    package mutating func forget(_ node: Fingerprint) { buckets = buckets.filter { $0.key.node != node } }
}
