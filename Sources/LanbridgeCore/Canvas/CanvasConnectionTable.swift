import LanbridgeProtocol

/// The canvas relay's connections, as a value (issue 49 §3): which hold a slot, which node each
/// proved a capability for, and which one a new connection evicts. The relay's handlers move
/// bytes and close what this names; `Handle` is whatever they close (a channel).
///
/// A connection holds a slot from accept. Until it shows a live capability it is unproven, and
/// when every slot is held the oldest unproven one goes for a new one (a flood of strangers
/// cannot keep a paired node out); then the oldest resting one (kept alive between two requests,
/// issue 53 §1); when every slot is busy, the new one is refused. A proven connection counts for
/// its node, up to `perNode`; past it, the node's own oldest resting connection makes way.
package struct CanvasConnectionTable<Handle> {
    package var total: Int
    package var perNode: Int
    private var nextID = 0
    /// Oldest first by ID.
    private var unproven: [Int: Handle] = [:]
    private var byNode: [Fingerprint: [Int: Handle]] = [:]
    /// Proven connections kept between two requests, and their nodes: the first to go.
    private var resting: [Int: Fingerprint] = [:]

    package init(total: Int, perNode: Int) { (self.total, self.perNode) = (total, perNode) }

    package var count: Int { unproven.count + byNode.values.reduce(0) { $0 + $1.count } }

    /// A new connection's ID (nil: refused, every slot is proven) and the one it evicted, if any.
    package mutating func admit(_ handle: Handle) -> (id: Int?, evicted: Handle?) {
        var evicted: Handle?
        if count >= total {
            if let oldest = unproven.keys.min() {
                evicted = unproven.removeValue(forKey: oldest)
            } else if let oldest = resting.keys.min() {
                evicted = evictResting(oldest)
            } else {
                return (nil, nil)
            }
        }
        nextID += 1
        unproven[nextID] = handle
        return (nextID, evicted)
    }

    /// The connection showed a live capability for `node`: false when it was evicted meanwhile or
    /// the node holds its bound already (the connection is then the caller's to close).
    /// At its bound, the node's oldest resting connection goes (`evicted`, for the caller to close).
    package mutating func prove(_ id: Int, node: Fingerprint) -> (proven: Bool, evicted: Handle?) {
        guard let handle = unproven.removeValue(forKey: id) else { return (false, nil) }
        var evicted: Handle?
        if byNode[node, default: [:]].count >= perNode {
            guard let oldest = resting.filter({ $0.value == node }).keys.min() else { return (false, nil) }
            evicted = evictResting(oldest)
        }
        byNode[node, default: [:]][id] = handle
        return (true, evicted)
    }

    /// A proven connection's answer is written and it waits for its next request: evictable
    /// until `resume`. False when it is gone already (evicted, revoked).
    package mutating func rest(_ id: Int, node: Fingerprint) -> Bool {
        guard byNode[node]?[id] != nil else { return false }
        resting[id] = node
        return true
    }

    /// A resting connection's next request is for `node`'s capability: it is busy again. False when
    /// it was evicted meanwhile, or the capability is another node's (the connection was proven for one).
    package mutating func resume(_ id: Int, node: Fingerprint) -> Bool {
        guard resting[id] == node, byNode[node]?[id] != nil else { return false }
        resting[id] = nil
        return true
    }

    private mutating func evictResting(_ id: Int) -> Handle? {
        guard let node = resting.removeValue(forKey: id) else { return nil }
        let handle = byNode[node]?.removeValue(forKey: id)
        if byNode[node]?.isEmpty == true { byNode[node] = nil }
        return handle
    }

    package mutating func closed(_ id: Int, node: Fingerprint?) {
        unproven[id] = nil
        resting[id] = nil
        guard let node else { return }
        byNode[node]?[id] = nil
        if byNode[node]?.isEmpty == true { byNode[node] = nil }
    }

    /// The node's capability died: its connections, to close now (live-reload sockets included).
    package mutating func revoke(_ node: Fingerprint) -> [Handle] {
        resting = resting.filter { $0.value != node }
        return Array((byNode.removeValue(forKey: node) ?? [:]).values)
    }

    /// Everything open, for the relay's stop.
    package var all: [Handle] { Array(unproven.values) + byNode.values.flatMap(\.values) }
}

/// Refusals by reason (a fixed set): the first is logged at once, then one line a minute with the
/// count since, so a flood names every bound it hits without flooding the log.
package struct RefusalSummary: Sendable {
    private var counts: [String: Int] = [:]
    private var logged: [String: Moment] = [:]

    package init() {}

    /// How many to report now (this one included), or nil to stay quiet.
    package mutating func note(_ reason: String, now: Moment) -> Int? {
        counts[reason, default: 0] += 1
        guard now.timeIntervalSince(logged[reason] ?? .distantPast) >= 60 else { return nil }
        defer { (counts[reason], logged[reason]) = (0, now) }
        return counts[reason]
    }
}
