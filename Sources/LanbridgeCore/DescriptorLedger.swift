/// Every descriptor the daemon's listeners hold, counted at accept against one budget (issue 48
/// §3): the open-file limit less a reserve for the daemon's own work (state files, the gateway
/// link, Avahi, the control socket, a hook's pipes). Per-listener bounds alone did not hold: their
/// sum, and connections that lingered after they were let go, passed the limit.
///
/// A connection is unproven until it shows it belongs (a paired key on the Noise listener or the
/// door for OpenClaw's apps, a live capability at the canvas relay). When a new connection does
/// not fit, the busiest peer's oldest unproven connections make room (a peer is what the caller
/// says: an IPv4 address, an IPv6 /64, a local uid); only when proven connections hold it all is
/// the new one refused. A flood thus degrades the flooder, while a paired node, a canvas fetch and
/// the operator keep what they need. Pure: the caller closes what it is told to.
package struct DescriptorLedger: Sendable {
    package enum Decision: Equatable, Sendable {
        /// Admitted as `id`; close `evicting` (unproven connections of the busiest peers) first.
        case admit(Int, evicting: [Int])
        case refuse
    }

    private struct Entry: Sendable {
        let peer: String
        let cost: Int
        var proven: Bool
    }

    /// Descriptors the listeners may hold in all.
    package let capacity: Int
    package private(set) var used = 0
    /// What unproven connections hold of `used`.
    private var unprovenUsed = 0
    private var entries: [Int: Entry] = [:]
    private var nextID = 0
    /// Each peer's unproven connections, oldest first.
    private var unproven: [String: [Int]] = [:]
    /// Peers by how many unproven connections they hold, so the busiest is found without a scan
    /// of every peer.
    private var peersHolding: [Int: Set<String>] = [:]
    private var most = 0
    /// Every unproven connection, oldest first (IDs that left are skipped when met): the oldest
    /// when every peer holds one, found without a scan.
    private var queue: [Int] = []
    private var queueHead = 0
    /// Unproven connections now (what the queue would hold if nothing had left it).
    private var unprovenConnections = 0

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    package var count: Int { entries.count }
    /// IDs waiting in the eviction queue, those that left included (bounded: see `addUnproven`).
    package var queued: Int { queue.count - queueHead }
    package var unprovenCount: Int { unproven.values.reduce(0) { $0 + $1.count } }

    /// A new connection from `peer`, holding `cost` descriptors (2 for one that dials out for it).
    package mutating func admit(peer: String, cost: Int = 1) -> Decision {
        // Proven connections hold too much for it to fit, whatever goes: refused, nothing evicted.
        guard used - unprovenUsed + cost <= capacity else { return .refuse }
        var evicting: [Int] = []
        while used + cost > capacity, let victim = busiestOldest() {
            release(victim)
            evicting.append(victim)
        }
        nextID += 1
        entries[nextID] = Entry(peer: peer, cost: cost, proven: false)
        used += cost
        addUnproven(nextID, peer: peer)
        return .admit(nextID, evicting: evicting)
    }

    /// The connection showed it belongs: it is never evicted from now on.
    package mutating func prove(_ id: Int) {
        guard let entry = entries[id], !entry.proven else { return }
        entries[id]?.proven = true
        removeUnproven(id, entry)
    }

    /// The connection closed (or was evicted).
    package mutating func release(_ id: Int) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        used -= entry.cost
        if !entry.proven { removeUnproven(id, entry) }
    }

    package func isProven(_ id: Int) -> Bool { entries[id]?.proven ?? false }

    // MARK: - The busiest peer

    /// The oldest unproven connection of the peer holding the most (on a tie, the one whose oldest
    /// is oldest); nil when nothing is unproven.
    private mutating func busiestOldest() -> Int? {
        guard most > 0, let peers = peersHolding[most] else { return nil }
        guard most == 1 else { return peers.compactMap { unproven[$0]?.first }.min() }
        while queueHead < queue.count {
            let id = queue[queueHead]
            if let entry = entries[id], !entry.proven { return id }
            queueHead += 1
        }
        return nil
    }

    private mutating func addUnproven(_ id: Int, peer: String) {
        unprovenUsed += entries[id]?.cost ?? 0
        if queueHead > 1024, queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        // IDs that left (proven, closed) stay until met, and without evictions none is met: when
        // they are most of the queue, it keeps only the unproven (issue 53 §5: it grew by an ID for
        // every connection ever accepted, 8 bytes each, 15 MiB in a day of churn).
        if queued > 2 * unprovenConnections + 1024 {
            queue = queue[queueHead...].filter { entries[$0].map { !$0.proven } ?? false }
            queueHead = 0
        }
        unprovenConnections += 1
        queue.append(id)
        let before = unproven[peer]?.count ?? 0
        unproven[peer, default: []].append(id)
        move(peer, from: before, to: before + 1)
    }

    private mutating func removeUnproven(_ id: Int, _ entry: Entry) {
        let peer = entry.peer
        guard var ids = unproven[peer], let index = ids.firstIndex(of: id) else { return }
        unprovenUsed -= entry.cost
        unprovenConnections -= 1
        let before = ids.count
        ids.remove(at: index)
        unproven[peer] = ids.isEmpty ? nil : ids
        move(peer, from: before, to: before - 1)
    }

    private mutating func move(_ peer: String, from: Int, to: Int) {
        if from > 0 {
            peersHolding[from]?.remove(peer)
            if peersHolding[from]?.isEmpty == true { peersHolding[from] = nil }
        }
        if to > 0 { peersHolding[to, default: []].insert(peer) }
        if to > most { most = to }
        while most > 0, peersHolding[most] == nil { most -= 1 }
    }
}
