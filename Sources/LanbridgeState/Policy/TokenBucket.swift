import FoundationEssentials
import LanbridgeProtocol

/// A token bucket: `capacity` tokens, refilled at `perSecond`. The clock is an argument, so limits
/// are tested without waiting. Used for per-node forwards, snapshots and the like.
public struct TokenBucket: Sendable, Equatable {
    public let capacity: Double
    public let perSecond: Double
    private var tokens: Double
    private var updated: Moment

    public init(capacity: Double, perSecond: Double, now: Moment) {
        (self.capacity, self.perSecond, tokens, updated) = (capacity, perSecond, capacity, now)
    }

    /// Takes `count` tokens (one by default), or says how long until they are available.
    public mutating func take(_ count: Double = 1, now: Moment) -> TakeResult {
        refill(now)
        if tokens >= count {
            tokens -= count
            return .granted
        }
        return .limited(retryAfterMs: Int(((count - tokens) / perSecond * 1000).rounded(.up)))
    }

    public enum TakeResult: Equatable, Sendable {
        case granted
        case limited(retryAfterMs: Int)
    }

    private mutating func refill(_ now: Moment) {
        let elapsed = max(0, now.timeIntervalSince(updated))
        tokens = min(capacity, tokens + elapsed * perSecond)
        updated = now
    }
}
