import LanbridgeProtocol

/// The canvas relay's connections, as a value (issue 49 §3): which hold a slot, which node each
/// proved a capability for, and which one a new connection evicts. The relay's handlers move
/// bytes and close what this names; `Handle` is whatever they close (a channel).
///
/// A connection holds a slot from accept. Until it shows a live capability it is unproven, and
/// when every slot is held the oldest unproven one goes for a new one (a flood of strangers
/// cannot keep a paired node out); when every slot is proven, the new one is refused. A proven
/// connection counts for its node, up to `perNode`.
package struct CanvasConnectionTable<Handle> {
    package var total: Int
    package var perNode: Int
    private var nextID = 0
    /// Oldest first by ID.
    private var unproven: [Int: Handle] = [:]
    private var byNode: [Fingerprint: [Int: Handle]] = [:]

    package init(total: Int, perNode: Int) { (self.total, self.perNode) = (total, perNode) }

    package var count: Int { unproven.count + byNode.values.reduce(0) { $0 + $1.count } }

    /// A new connection's ID (nil: refused, every slot is proven) and the one it evicted, if any.
    package mutating func admit(_ handle: Handle) -> (id: Int?, evicted: Handle?) {
        var evicted: Handle?
        if count >= total {
            guard let oldest = unproven.keys.min() else { return (nil, nil) }
            evicted = unproven.removeValue(forKey: oldest)
        }
        nextID += 1
        unproven[nextID] = handle
        return (nextID, evicted)
    }

    /// The connection showed a live capability for `node`: false when it was evicted meanwhile or
    /// the node holds its bound already (the connection is then the caller's to close).
    package mutating func prove(_ id: Int, node: Fingerprint) -> Bool {
        guard let handle = unproven.removeValue(forKey: id) else { return false }
        guard byNode[node, default: [:]].count < perNode else { return false }
        byNode[node, default: [:]][id] = handle
        return true
    }

    package mutating func closed(_ id: Int, node: Fingerprint?) {
        unproven[id] = nil
        guard let node else { return }
        byNode[node]?[id] = nil
        if byNode[node]?.isEmpty == true { byNode[node] = nil }
    }

    /// The node's capability died: its connections, to close now (live-reload sockets included).
    package mutating func revoke(_ node: Fingerprint) -> [Handle] {
        Array((byNode.removeValue(forKey: node) ?? [:]).values)
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
