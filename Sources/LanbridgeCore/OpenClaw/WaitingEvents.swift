import LanbridgeProtocol

/// A node's calls to the agent waiting for its socket at an OpenClaw gateway while that socket
/// re-offers or reconnects (issue 36: a voice transcript sent right after a rule change was lost):
/// at most `limit`, each for `wait` seconds. A value on the monotonic clock, beside
/// `WaitingInvokes` (what waits for a node); the link carries out what it says (one timer, at
/// `nextDeadline`), and WaitingEventsTests holds its rules.
package struct WaitingEvents {
    package struct Event: Equatable, Sendable {
        package var event: String
        package var payload: JSONValue
        /// The call's tag, to answer it; nil for an event nobody waits on.
        package var tag: String?
        package var expires: Moment
    }

    package let limit: Int
    package let wait: Double
    private var events: [Event] = []

    package init(limit: Int, wait: Double) { (self.limit, self.wait) = (limit, wait) }

    package var count: Int { events.count }
    /// When the oldest gives up (they wait in arrival order, each as long).
    package var nextDeadline: Moment? { events.first?.expires }

    /// Waits, or false when `limit` already wait (the caller answers it UNAVAILABLE).
    package mutating func add(_ event: String, payload: JSONValue, tag: String?, now: Moment) -> Bool {
        guard events.count < limit else { return false }
        events.append(Event(event: event, payload: payload, tag: tag, expires: now + wait))
        return true
    }

    /// Those whose wait is over at `now`, oldest first, no longer waiting.
    package mutating func expire(now: Moment) -> [Event] {
        let over = events.prefix { $0.expires <= now }
        events.removeFirst(over.count)
        return Array(over)
    }

    /// Everything that waits, in order: the socket is up (send them) or the node left (refuse them).
    package mutating func takeAll() -> [Event] {
        defer { events = [] }
        return events
    }
}
