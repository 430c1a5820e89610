import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// Invokes an ask rule matched (`nodes ask`), waiting for the operator's answer
/// (`lanbridge invokes approve|deny`). A sub-machine of the core, beside `HeldInvokes`: each event
/// says which invokes stop waiting and what their askers hear; an approved one goes back through
/// the gate, decided again as it is then.
///
/// Bounded per node and in all; past a bound the newest is refused at once (HOLD_LIMIT, reason
/// ASK_LIMIT, retryable), never an older one dropped. Never written to disk: a restart answers
/// every one UNAVAILABLE (retryable) as the bridge stops.
package struct AskedInvokes: WaitingInvokes {
    package struct Limits: Equatable {
        package var perNode: Int
        package var total: Int
        package var timeoutMs: Int
    }

    package struct Entry {
        /// What the operator answers by: random, never repeated across restarts.
        package var id: String
        package var request: InvokeRequest
        package var origin: InvokeBook.Origin
        package var waiter: InvokeBook.Waiter
        package var node: Fingerprint
        /// The ask rule that matched, as written.
        package var rule: String
        package var askedAt: Date
        package var expires: Moment
    }

    /// What the operator is shown of one (`ask.list`: the CLI and the console read it): never the
    /// params, only their shape.
    package struct Prompt: Codable, Sendable, Equatable {
        package let id, nodeId, name, command, askRule, asker, askedAt, params: String
        package let expiresInMs: Int

        package init(id: String, nodeId: String, name: String, command: String, askRule: String, asker: String, askedAt: String, params: String, expiresInMs: Int) {
            (self.id, self.nodeId, self.name, self.command, self.askRule) = (id, nodeId, name, command, askRule)
            (self.asker, self.askedAt, self.params, self.expiresInMs) = (asker, askedAt, params, expiresInMs)
        }

        /// The prompts in an `ask.list` answer.
        package static func list(_ answer: JSONValue?) throws -> [Prompt] {
            try (answer?["asks"] ?? .array([])).decoded(as: [Prompt].self)
        }
    }

    package struct Ending {
        package var entry: Entry
        package var error: ErrorMessage
        package var waiter: InvokeBook.Waiter { entry.waiter }
    }

    package var limits = Limits(BridgeSettings().limits)  // the `Limit` table's defaults
    /// In the order they were asked; at most `limits.total`, so a scan is short.
    package private(set) var entries: [Entry] = [] { didSet { generation &+= 1 } }
    /// Changes whenever an invoke starts or stops waiting: the console's prompt is redrawn then.
    package private(set) var generation = 0
    /// `invokes approve --for`: a command the operator said yes to for a while, per node. At most
    /// `limits.perNode` per node (the oldest goes); gone with the pairing or the time.
    private var grants: [Fingerprint: [(command: String, until: Moment)]] = [:]

    package func granted(_ node: Fingerprint, _ command: String, now: Moment) -> Bool {
        grants[node]?.contains { CommandPattern.same($0.command, command) && $0.until > now } ?? false
    }

    package mutating func grant(_ node: Fingerprint, _ command: String, until: Moment, now: Moment) {
        var list = (grants[node] ?? []).filter { $0.until > now && !CommandPattern.same($0.command, command) }
        list.append((command, until))
        grants[node] = Array(list.suffix(max(limits.perNode, 1)))
    }

    package var count: Int { entries.count }
    package var nextDeadline: Moment? { entries.map(\.expires).min() }

    /// A new asked invoke; nil if it waits, else the refusal its asker hears now.
    package mutating func ask(_ entry: Entry) -> ErrorMessage? {
        let full: String? =
            if entries.count(where: { $0.node == entry.node }) >= limits.perNode {
                "\(limits.perNode) invokes already wait for the operator's answer about this node"
            } else if entries.count >= limits.total {
                "\(limits.total) invokes already wait for the operator's answer"
            } else { nil }
        if let full {
            return ErrorMessage(
                code: ErrorMessage.holdLimit, message: "\(entry.request.command) not asked: \(full)",
                details: details(entry, reason: ErrorMessage.askLimit), retryable: true, retryAfterMs: 1000)
        }
        entries.append(entry)
        return nil
    }

    /// The operator's answer names it: it stops waiting (the core runs or refuses it).
    package mutating func answer(_ id: String) -> Entry? {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return nil }
        return entries.remove(at: index)
    }

    package func details(_ entry: Entry, reason: String) -> JSONValue {
        ["nodeId": .string(entry.node.description), "command": .string(entry.request.command), "reason": .string(reason), "askRule": .string(entry.rule)]
    }

    // MARK: - Endings

    /// Nobody answered in time: ASK_TIMEOUT, not retryable (asking again asks the operator again).
    package mutating func expire(now: Moment) -> [Ending] {
        remove { $0.expires <= now }.map {
            Ending(
                entry: $0,
                error: ErrorMessage(
                    code: ErrorMessage.forbidden, message: "\($0.request.command): the operator did not answer in time (ask rule \($0.rule))",
                    details: details($0, reason: ErrorMessage.askTimeout), retryable: false))
        }
    }

    /// `node.invoke.cancel` named an asked invoke of `node`.
    package mutating func cancel(node: Fingerprint, where matches: (InvokeBook.Waiter) -> Bool) -> [Ending] {
        remove { $0.node == node && matches($0.waiter) }.map {
            Ending(
                entry: $0,
                error: ErrorMessage(
                    code: ErrorMessage.cancelled, message: "\($0.request.command) was cancelled while it waited for the operator",
                    details: details($0, reason: ErrorMessage.cancelled), retryable: false))
        }
    }

    /// The bridge stops (a restart forgets every question): UNAVAILABLE, retryable.
    package mutating func stopping() -> [Ending] {
        remove { _ in true }.map {
            Ending(
                entry: $0,
                error: ErrorMessage(
                    code: ErrorMessage.unavailable, message: "the bridge is stopping; \($0.request.command) was not answered",
                    details: details($0, reason: ErrorMessage.unavailable), retryable: true))
        }
    }

    /// Nodes no longer paired: what waits for them fails at once, and their grants go.
    package mutating func revoked(where unpaired: (Fingerprint) -> Bool) -> [Ending] {
        grants = grants.filter { !unpaired($0.key) }
        return remove { unpaired($0.node) }.map {
            Ending(
                entry: $0,
                error: ErrorMessage(
                    code: ErrorMessage.nodeNotFound, message: "the node's pairing was revoked", details: details($0, reason: ErrorMessage.nodeNotFound),
                    retryable: false))
        }
    }

    package static func waiter(of entry: Entry) -> InvokeBook.Waiter { entry.waiter }
    package static func ending(_ entry: Entry, _ error: ErrorMessage) -> Ending { Ending(entry: entry, error: error) }

    package mutating func remove(where matches: (Entry) -> Bool) -> [Entry] {
        let removed = entries.filter(matches)
        if !removed.isEmpty { entries.removeAll(where: matches) }
        return removed
    }
}

extension AskedInvokes.Limits {
    package init(_ limits: BridgeSettings.Limits) {
        (perNode, total, timeoutMs) = (limits[.askPerNode], limits[.askTotal], limits[.askTimeoutMs])
    }
}
