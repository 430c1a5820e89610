/// Capped exponential backoff with ±20 % jitter, back to the start after an attempt that lasted:
/// the one redial schedule of the gateway link, the nodes' OpenClaw sockets and the node SDK.
/// Pure: the caller says how long the last attempt lasted and passes the jitter.
public struct Backoff: Sendable, Equatable {
    public let initial: Double
    public let maximum: Double
    /// An attempt that stayed up longer than this was a connection, not a failure: start over.
    public let resetAfter: Double
    public private(set) var current: Double
    /// Failed attempts in a row (for logs that should not repeat every one).
    public private(set) var failures = 0

    public init(initial: Double, maximum: Double, resetAfter: Double) {
        (self.initial, self.maximum, self.resetAfter, current) = (initial, maximum, resetAfter, initial)
    }

    /// An attempt ended after `lasted` seconds: how long to wait before the next. `jitter` is in
    /// 0...1 (uniform at random in use; fixed in tests).
    public mutating func wait(lasted: Double, jitter: Double = Double.random(in: 0...1)) -> Double {
        if lasted > resetAfter { (current, failures) = (initial, 0) }
        failures += 1
        return current * (0.8 + 0.4 * min(max(jitter, 0), 1))
    }

    /// The attempt failed in the ordinary way: the next wait doubles, up to `maximum`. (Some
    /// failures retry at once or at a fixed time, and do not grow it.)
    public mutating func grow() {
        current = min(current * 2, maximum)
    }
}
