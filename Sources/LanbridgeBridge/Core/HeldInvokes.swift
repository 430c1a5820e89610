import LanbridgeProtocol
import LanbridgeState

/// Invokes that asked to wait for their node (`hold: {maxMs}`, PROTOCOL.md §12.3): a command
/// that needs the foreground of a node in the background, or any command for a paired node that
/// is not connected. Pure and bounded: per node, in all and in bytes; past a bound the newest is
/// refused, never an older one dropped. Each node's invokes leave in the order they came.
struct HeldInvokes {
    struct Limits: Equatable {
        var perNode = 16
        var total = 256
        /// The parameters of everything held, together.
        var bytes = 4 << 20
    }

    struct Entry {
        var request: InvokeRequest
        var origin: InvokeRouter.Origin
        /// Who asked, for which idempotency slot, and when (`started`: waiting counts as latency).
        var waiter: BridgeCore.Waiter
        /// When holding ends.
        var expires: Moment
        var bytes: Int
        /// What the asker hears if holding ends: the last reason it could not run.
        var refusal: ErrorMessage
    }

    var limits = Limits()
    private var queues: [Fingerprint: [Entry]] = [:]
    private(set) var count = 0
    private(set) var bytes = 0

    var isEmpty: Bool { count == 0 }
    func count(forNode node: Fingerprint) -> Int { queues[node]?.count ?? 0 }

    /// Holds `entry` at the end of its node's queue, or says which bound it would pass.
    mutating func hold(_ entry: Entry, node: Fingerprint) -> String? {
        let queued = queues[node]?.count ?? 0
        if queued >= limits.perNode { return "\(limits.perNode) invokes already wait for this node" }
        if count >= limits.total { return "\(limits.total) invokes already wait in all" }
        if bytes + entry.bytes > limits.bytes { return "the invokes waiting already hold \(bytes) of \(limits.bytes) bytes" }
        queues[node, default: []].append(entry)
        (count, bytes) = (count + 1, bytes + entry.bytes)
        return nil
    }

    /// Puts back entries taken with `take` that still cannot run, ahead of any held since, so the
    /// order stays the asker's.
    mutating func putBack(_ entries: [Entry], node: Fingerprint) {
        guard !entries.isEmpty else { return }
        queues[node] = entries + (queues[node] ?? [])
        count += entries.count
        bytes += entries.reduce(0) { $0 + $1.bytes }
    }

    /// Everything held for `node`, oldest first, no longer held.
    mutating func take(node: Fingerprint) -> [Entry] {
        let taken = queues.removeValue(forKey: node) ?? []
        forget(taken)
        return taken
    }

    /// Entries whose time is up, no longer held (by node, each node's oldest first).
    mutating func expire(now: Moment) -> [Entry] {
        remove { $0.expires <= now }
    }

    /// Entries that match, no longer held.
    mutating func remove(where matches: (Entry) -> Bool) -> [Entry] {
        var removed: [Entry] = []
        for node in queues.keys.sorted(by: { $0.description < $1.description }) { removed += remove(node: node, where: matches) }
        return removed
    }

    /// One node's entries that match, no longer held.
    mutating func remove(node: Fingerprint, where matches: (Entry) -> Bool) -> [Entry] {
        guard let queue = queues[node], queue.contains(where: matches) else { return [] }
        let removed = queue.filter(matches)
        let kept = queue.filter { !matches($0) }
        queues[node] = kept.isEmpty ? nil : kept
        forget(removed)
        return removed
    }

    /// Nodes with something held.
    var nodes: [Fingerprint] { Array(queues.keys) }

    var nextDeadline: Moment? { queues.values.lazy.flatMap { $0 }.map(\.expires).min() }

    private mutating func forget(_ entries: [Entry]) {
        count -= entries.count
        bytes -= entries.reduce(0) { $0 + $1.bytes }
    }
}

extension HeldInvokes.Limits {
    init(_ limits: BridgeSettings.Limits) {
        (perNode, total, bytes) = (limits.heldPerNode, limits.heldTotal, limits.heldBytes)
    }
}
