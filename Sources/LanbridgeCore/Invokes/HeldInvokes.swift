import LanbridgeProtocol
import LanbridgeState

/// Invokes that asked to wait for their node (`hold: {maxMs}`, PROTOCOL.md §12.3): a command
/// that needs the foreground of a node in the background, or any command for a paired node that
/// is not connected. A sub-machine of the core: each event says which invokes stop waiting and
/// what their askers hear (`Ending`); `BridgeCore` carries that out (answers, the idempotency slot,
/// the metrics) and runs what `take` releases.
///
/// Bounded per node, in all and in bytes; past a bound the newest is refused, never an older one
/// dropped. Each node's invokes leave in the order they came. The wake hook runs at most once per
/// node per `WakeSchedule.intervalSeconds`.
package struct HeldInvokes: WaitingInvokes {
    package struct Limits: Equatable {
        package var perNode: Int
        package var total: Int
        /// The parameters of everything held, together.
        package var bytes: Int
    }

    package struct Entry {
        package var request: InvokeRequest
        package var origin: InvokeBook.Origin
        /// Who asked, for which idempotency slot, and when (`started`: waiting counts as latency).
        package var waiter: InvokeBook.Waiter
        /// When holding ends.
        package var expires: Moment
        package var bytes: Int
        /// What the asker hears if holding ends: the last reason it could not run.
        package var refusal: ErrorMessage
        /// The operator already said yes to it (an ask rule matched): released, it is not asked again.
        package var approved = false
    }

    /// An invoke that stops waiting without running, and what its asker hears.
    package struct Ending {
        package var entry: Entry
        package var error: ErrorMessage
        package var waiter: InvokeBook.Waiter { entry.waiter }
    }

    package enum Verdict: Equatable {
        /// Queued; `wake` is the hook's call when the node is due one.
        case held(wake: WakeCall?)
        /// Not held: a bound is reached. The asker hears this (retryable).
        case refused(ErrorMessage)
    }

    package var limits = Limits(BridgeSettings().limits)  // the `Limit` table's defaults
    private var queues: [Fingerprint: [Entry]] = [:]
    private var wakes = WakeSchedule()
    package private(set) var count = 0
    package private(set) var bytes = 0

    package var isEmpty: Bool { count == 0 }
    package func count(forNode node: Fingerprint) -> Int { queues[node]?.count ?? 0 }
    /// Nodes with something held.
    package var nodes: [Fingerprint] { Array(queues.keys) }
    package var nextDeadline: Moment? { queues.values.lazy.flatMap { $0 }.map(\.expires).min() }

    // MARK: - Events

    /// A new invoke that cannot run yet: queued behind its node's others, or refused at a bound.
    package mutating func hold(_ entry: Entry, node: PairedNode, hook: BridgeSettings.Hook, now: Moment) -> Verdict {
        if let full = bound(for: entry, node: node.nodeId) {
            return .refused(
                ErrorMessage(
                    code: ErrorMessage.holdLimit, message: "not held: \(full)",
                    details: entry.refusal.details, retryable: true, retryAfterMs: 1000))
        }
        queues[node.nodeId, default: []].append(entry)
        (count, bytes) = (count + 1, bytes + entry.bytes)
        guard hook.exec != nil, wakes.due(node.nodeId, now: now) else { return .held(wake: nil) }
        return .held(
            wake: WakeCall(
                hook: hook, node: node.nodeId, displayName: node.details.displayName, platform: node.details.platform,
                command: entry.request.command, why: entry.refusal.code, holdMs: entry.request.holdMs ?? 0, heldAt: now))
    }

    /// Everything held for `node`, oldest first, no longer held: the core runs what it can and
    /// puts the rest back.
    package mutating func take(node: Fingerprint) -> [Entry] {
        let taken = queues.removeValue(forKey: node) ?? []
        forget(taken)
        return taken
    }

    /// Puts back entries taken with `take` that still cannot run, ahead of any held since, so the
    /// order stays the asker's.
    package mutating func putBack(_ entries: [Entry], node: Fingerprint) {
        guard !entries.isEmpty else { return }
        queues[node] = entries + (queues[node] ?? [])
        count += entries.count
        bytes += entries.reduce(0) { $0 + $1.bytes }
    }

    /// Time is up: the asker hears the last reason it could not run, with `held: true` and how
    /// long it waited.
    package mutating func expire(now: Moment) -> [Ending] {
        remove { $0.expires <= now }.map { entry in
            var error = entry.refusal
            let waitedMs = Int(now.timeIntervalSince(entry.waiter.started) * 1000)
            error.details = (error.details ?? .object([:])).merging(["held": true, "waitedMs": .number(Double(waitedMs))])
            // Not the words of an immediate refusal: the caller waited, and should know it did.
            error.message += "; held \(NumberText.duration(seconds: Double(waitedMs) / 1000)), it did not come back in time"
            return Ending(entry: entry, error: error)
        }
    }

    /// `node.invoke.cancel` named a held invoke of `node`: it never runs.
    package mutating func cancel(node: Fingerprint, where matches: (InvokeBook.Waiter) -> Bool) -> [Ending] {
        remove(node: node) { matches($0.waiter) }.map {
            Ending(
                entry: $0,
                error: ErrorMessage(
                    code: ErrorMessage.cancelled, message: "\($0.request.command) was cancelled while it was held",
                    details: $0.refusal.details, retryable: false))
        }
    }

    /// The bridge stops: everything held hears so (retryable), nothing is left waiting.
    package mutating func stopping() -> [Ending] {
        remove { _ in true }.map {
            Ending(entry: $0, error: ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge is stopping", details: $0.refusal.details, retryable: true))
        }
    }

    /// Nodes no longer paired: their held invokes fail at once.
    package mutating func revoked(where unpaired: (Fingerprint) -> Bool) -> [Ending] {
        guard !isEmpty else { return [] }
        return nodes.filter(unpaired).sorted(by: { $0.description < $1.description }).flatMap { take(node: $0) }.map {
            Ending(
                entry: $0,
                error: ErrorMessage(
                    code: ErrorMessage.nodeNotFound, message: "the node's pairing was revoked",
                    details: $0.refusal.details, retryable: false))
        }
    }

    // MARK: - The queues

    private func bound(for entry: Entry, node: Fingerprint) -> String? {
        if count(forNode: node) >= limits.perNode { return "\(limits.perNode) invokes already wait for this node" }
        if count >= limits.total { return "\(limits.total) invokes already wait in all" }
        if bytes + entry.bytes > limits.bytes { return "the invokes waiting already hold \(bytes) of \(limits.bytes) bytes" }
        return nil
    }

    package static func waiter(of entry: Entry) -> InvokeBook.Waiter { entry.waiter }
    package static func ending(_ entry: Entry, _ error: ErrorMessage) -> Ending { Ending(entry: entry, error: error) }

    /// Entries that match, no longer held (by node, each node's oldest first).
    package mutating func remove(where matches: (Entry) -> Bool) -> [Entry] {
        var removed: [Entry] = []
        for node in queues.keys.sorted(by: { $0.description < $1.description }) { removed += remove(node: node, where: matches) }
        return removed
    }

    /// One node's entries that match, no longer held.
    private mutating func remove(node: Fingerprint, where matches: (Entry) -> Bool) -> [Entry] {
        guard let queue = queues[node], queue.contains(where: matches) else { return [] }
        let removed = queue.filter(matches)
        let kept = queue.filter { !matches($0) }
        queues[node] = kept.isEmpty ? nil : kept
        forget(removed)
        return removed
    }

    private mutating func forget(_ entries: [Entry]) {
        count -= entries.count
        bytes -= entries.reduce(0) { $0 + $1.bytes }
    }
}

extension HeldInvokes.Limits {
    package init(_ limits: BridgeSettings.Limits) {
        (perNode, total, bytes) = (limits[.heldPerNode], limits[.heldTotal], limits[.heldBytes])
    }
}
