import FoundationEssentials
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// Every invoke the bridge has taken and not yet answered, and what it remembers of those it has
/// (issue 49 §2): in flight to a node (one entry each, holding its asker), held for a node that is
/// away or in the background (`HeldInvokes`), joined by an idempotent retry (`IdempotencyCache`),
/// and the denials audited lately. A sub-machine folded into the core the way postgres-nio folds
/// its own: the core asks, the book records what follows as `Action`s, and the core carries them
/// out (`BridgeCore.fold`, once per event, from `drain`). It decides nothing about rules: `InvokeGate` does, before `send`.
///
/// Rules of the book: an answer reaches its asker once, and the retries joined to it with it; a
/// result counts only from the node and the connection its invoke went out on, before its
/// deadline; what leaves the book (timeout, cancel, a closed connection, a lost gateway, a revoke,
/// the bridge stopping) is answered at once, never left to hang. Invoke IDs are `<prefix>.<n>`,
/// the prefix random per process, so an ID never repeats across restarts (PROTOCOL.md §9.4).
package struct InvokeBook {
    package static let cancelledRemembered = 1024
    /// Results bigger than this are relayed but not kept for idempotent retries.
    package static let cacheableResultBytes = 64 * 1024

    package private(set) var inFlight: [String: InFlight] = [:]
    private var perNode: [Fingerprint: Int] = [:]
    private var cancelled: Set<String> = []
    private var cancelledOrder: [String] = []
    package private(set) var idempotency = IdempotencyCache()
    package private(set) var held = HeldInvokes()
    package private(set) var asked = AskedInvokes()
    private var armed: Moment?
    /// Denials audited in the last minute, and how many more of each came since.
    private var denials: [String: (written: Moment, suppressed: Int)] = [:]
    package let idPrefix: String
    private var nextID = 0
    private var out: [Action] = []
    private var heldReported = 0

    /// `random` gives the ID prefix: 48 random bits, so two bridge processes share one about once
    /// in 2^24 restarts of a pair.
    package init(limits: BridgeSettings.Limits, random: (Int) -> [UInt8]) {
        idPrefix = "i" + Hex.encode(random(6))
        held.limits = HeldInvokes.Limits(limits)
        asked.limits = AskedInvokes.Limits(limits)
    }

    /// How many of its actions wait to be taken (none after an event: `BridgeCore.drain` takes them).
    package var untaken: Int { out.count }

    /// What the book decided since the last call.
    package mutating func take() -> [Action] {
        if held.count != heldReported {
            heldReported = held.count
            out.append(.heldCount(heldReported))
        }
        defer { out = [] }
        return out
    }

    package mutating func reload(_ limits: BridgeSettings.Limits) {
        held.limits = HeldInvokes.Limits(limits)
        asked.limits = AskedInvokes.Limits(limits)
    }

    package func inFlight(for node: Fingerprint) -> Int { perNode[node, default: 0] }

    /// The earliest deadline of what is in flight or held.
    package var nextDeadline: Moment? { [inFlight.values.map(\.deadline).min(), held.nextDeadline, asked.nextDeadline].compactMap { $0 }.min() }

    // MARK: - Idempotency

    package enum Admission {
        case run
        case answered(InvokeAnswer)
        /// Joined the invoke under way with the same key: answered with it.
        case joined
        case conflict
        /// The first attempt is gone without an answer (it cannot be joined).
        case vanished
    }

    /// A request with an idempotency key: run it, answer it from the cache, or join it to the same one under way.
    package mutating func admit(_ slot: Slot, request digest: [UInt8], node: String, target: AnswerTarget, now: Moment) -> Admission {
        switch idempotency.start(slot, request: digest, node: node, now: now) {
        case let .answered(earlier): .answered(earlier)
        case .conflict: .conflict
        case .wait: idempotency.join(slot, target) ? .joined : .vanished
        case .run: .run
        }
    }

    // MARK: - In flight

    /// Registers an invoke (the gate has decided it runs) and sends it to the node.
    package mutating func send(
        node: Fingerprint, connection: ConnectionID, command: String, params: JSONValue?, timeoutMs: Int,
        origin: Origin, waiter: Waiter, now: Moment
    ) {
        nextID += 1
        let invokeID = "\(idPrefix).\(nextID)"
        let deadline = now.adding(milliseconds: timeoutMs)
        inFlight[invokeID] = InFlight(invokeID: invokeID, node: node, connection: connection, origin: origin, deadline: deadline, waiter: waiter)
        perNode[node, default: 0] += 1
        arm(deadline)
        out.append(.send(Invoke(id: invokeID, command: command, params: params, timeoutMs: timeoutMs), to: connection))
    }

    /// A node's answer, on `connection`: its asker is answered, or it is dropped and the reason
    /// returned. `size` is the whole message's; over `limit`, a successful result is refused with
    /// PAYLOAD_TOO_LARGE (the node stays connected). A node's own failure reaches the asker as
    /// COMMAND_FAILED (or TIMEOUT, if the node timed out itself), its error in `details.nodeError`.
    @discardableResult
    package mutating func received(
        _ result: InvokeResult.Received, from node: Fingerprint, connection: ConnectionID, size: Int, limit: Int,
        now: Moment
    ) -> DropReason? {
        guard let entry = inFlight[result.id], entry.node == node else { return cancelled.contains(result.id) ? .cancelled : .unknown }
        // A handler of an earlier connection finishing late: its answer is not for this request.
        guard entry.connection == connection else { return .otherConnection }
        remove(entry)
        guard entry.deadline > now else { return .late }
        if result.ok, size > limit {
            fail(
                entry, ErrorMessage.payloadTooLarge, "the result is \(size) bytes; the limit is \(limit)",
                extra: ["bytes": .number(Double(size)), "limit": .number(Double(limit))], retryable: false, now: now)
            return nil
        }
        if result.ok {
            finish(entry.waiter, .success(result.payload), now: now)
            return nil
        }
        let nodeError = result.error ?? ErrorMessage(code: ErrorMessage.commandFailed, message: "the node reported a failure")
        let timedOut = nodeError.code == ErrorMessage.timeout
        let error = ErrorMessage(
            code: timedOut ? ErrorMessage.timeout : ErrorMessage.commandFailed, message: "\(entry.waiter.command) failed on the node: \(nodeError.message)",
            details: details(entry, ["nodeError": Self.json(nodeError)]), retryable: timedOut || nodeError.retryable == true,
            retryAfterMs: nodeError.retryAfterMs)
        finish(entry.waiter, .failure(error), now: now)
        return nil
    }

    /// The node sent something that is not strict JSON where a result may have been. Its answer to
    /// `invokeID` fails at once; if the ID could not be read, so do all of the node's invokes on
    /// that connection (a node that sends malformed results is broken; waiting out timeouts helps nobody).
    package mutating func malformed(invokeID: String?, from node: Fingerprint, connection: ConnectionID, reason: String, now: Moment) {
        let message = "the node's result is malformed: \(reason)"
        if let invokeID, let entry = inFlight[invokeID], entry.node == node, entry.connection == connection {
            remove(entry)
            return fail(entry, ErrorMessage.invalidResult, message, retryable: false, now: now)
        }
        failAll(where: { $0.node == node && $0.connection == connection }, code: ErrorMessage.invalidResult, message, retryable: false, now: now)
    }

    /// One connection ended (a node that reconnected keeps its newer one): what went out on it
    /// cannot be answered any more.
    package mutating func connectionClosed(_ connection: ConnectionID, now: Moment) {
        failAll(where: { $0.connection == connection }, code: ErrorMessage.nodeNotConnected, "the node's connection closed before it answered", now: now)
    }

    /// The gateway link dropped: nobody waits for the gateway's invokes any more, in flight or held.
    package mutating func gatewayLost(_ generation: Int, now: Moment) {
        failAll(where: { $0.origin == .gateway }, code: ErrorMessage.unavailable, "the gateway link dropped", now: now)
        end(held.gatewayLeft(generation), now: now)
        end(asked.gatewayLeft(generation), now: now)
    }

    /// The node was revoked: its invokes fail, in flight and held (`unpaired`: every node gone).
    package mutating func revoked(_ node: Fingerprint, now: Moment) {
        failAll(where: { $0.node == node }, code: ErrorMessage.nodeNotConnected, "the node's pairing was revoked", now: now)
    }

    package mutating func heldRevoked(where unpaired: (Fingerprint) -> Bool, now: Moment) {
        end(held.revoked(where: unpaired), now: now)
        end(asked.revoked(where: unpaired), now: now)
    }

    /// The bridge is stopping: everything is answered.
    package mutating func stopping(now: Moment) {
        failAll(where: { _ in true }, code: ErrorMessage.unavailable, "the bridge is stopping", now: now)
        end(held.stopping(), now: now)
        end(asked.stopping(), now: now)
    }

    /// The operator's control-socket clients that asked these went away: their held invokes are
    /// dropped, so nothing runs later that nobody waits for. What each was, for the log.
    package mutating func askersLeft(_ tokens: Set<Int>, now: Moment) -> [String] {
        let left = held.askersLeft(tokens)
        let leftAsked = asked.askersLeft(tokens)
        end(left, now: now)
        end(leftAsked, now: now)
        return left.map(\.entry.request.command) + leftAsked.map(\.entry.request.command)
    }

    /// Cancels the invoke to `node` whose waiter matches: one in flight (the node hears
    /// `invoke.cancel`) or one held for the node (it never runs). Its asker, and any retry joined
    /// to it, hears CANCELLED. False if there is none. Another node's invoke is not this cancel's.
    package mutating func cancel(node: Fingerprint, where matches: (Waiter) -> Bool, now: Moment) -> Bool {
        if let entry = inFlight.values.first(where: { $0.node == node && matches($0.waiter) }) {
            remove(entry)
            cancelled.insert(entry.invokeID)
            cancelledOrder.append(entry.invokeID)
            if cancelledOrder.count > Self.cancelledRemembered { cancelled.remove(cancelledOrder.removeFirst()) }
            out.append(.cancel(InvokeCancel(id: entry.invokeID), on: entry.connection))
            fail(entry, ErrorMessage.cancelled, "\(entry.waiter.command) was cancelled", retryable: false, now: now)
            return true
        }
        let ended = held.cancel(node: node, where: matches)
        let endedAsked = asked.cancel(node: node, where: matches)
        end(ended, now: now)
        end(endedAsked, now: now)
        return !ended.isEmpty || !endedAsked.isEmpty
    }

    /// Deadlines: invokes in flight time out, held ones stop waiting. The next deadline is armed.
    package mutating func expire(now: Moment) {
        armed = nil
        let due = inFlight.values.filter { $0.deadline <= now }.sorted { ($0.deadline, $0.invokeID) < ($1.deadline, $1.invokeID) }
        for entry in due {
            remove(entry)
            out.append(.withdraw(invokeID: entry.invokeID, on: entry.connection))
            fail(entry, ErrorMessage.timeout, "\(entry.waiter.command) did not answer in time", retryable: true, now: now)
        }
        end(held.expire(now: now), now: now)
        end(asked.expire(now: now), now: now)
        idempotency.expire(now: now)
        if let next = nextDeadline { arm(next) }
    }

    /// A deadline elsewhere in the core (the gateway's calls) shares the one timer.
    package mutating func arm(_ deadline: Moment) {
        if let armed, armed <= deadline { return }
        armed = deadline
        out.append(.arm(deadline))
    }

    // MARK: - Held

    package mutating func hold(_ entry: HeldInvokes.Entry, node: PairedNode, hook: BridgeSettings.Hook, now: Moment) -> HeldInvokes.Verdict {
        let verdict = held.hold(entry, node: node, hook: hook, now: now)
        switch verdict {
        case let .refused(error): finish(entry.waiter, .failure(error), now: now)
        case .held: arm(entry.expires)
        }
        return verdict
    }

    /// What waits for `node`, oldest first; what cannot run yet goes back with `putBack`.
    package mutating func takeHeld(_ node: Fingerprint) -> [HeldInvokes.Entry] { held.take(node: node) }
    package mutating func putBack(_ entries: [HeldInvokes.Entry], node: Fingerprint) { held.putBack(entries, node: node) }

    /// Held invokes that stop waiting without running: each asker hears why.
    private mutating func end(_ endings: [HeldInvokes.Ending], now: Moment) {
        for ending in endings { finish(ending.waiter, .failure(ending.error), now: now) }
    }

    // MARK: - Asked

    /// An invoke an ask rule matched waits for the operator, or is refused at a bound.
    package mutating func ask(_ entry: AskedInvokes.Entry, now: Moment) -> Bool {
        if let refusal = asked.ask(entry) {
            finish(entry.waiter, .failure(refusal), now: now)
            return false
        }
        arm(entry.expires)
        return true
    }

    /// The operator's answer: the asked invoke, no longer waiting (nil: unknown, answered or expired).
    package mutating func answerAsked(_ id: String) -> AskedInvokes.Entry? { asked.answer(id) }

    /// `invokes approve --for`: the command runs on the node without asking until then.
    package mutating func grantAsked(_ node: Fingerprint, _ command: String, until: Moment, now: Moment) {
        asked.grant(node, command, until: until, now: now)
    }

    private mutating func end(_ endings: [AskedInvokes.Ending], now: Moment) {
        for ending in endings {
            var waiter = ending.waiter
            waiter.note = "asked (ask rule \(ending.entry.rule)); not answered"
            finish(waiter, .failure(ending.error), now: now)
        }
    }

    // MARK: - Answers

    /// Answers the asker, and every retry that waited on the same idempotency key.
    package mutating func finish(_ waiter: Waiter, _ result: InvokeAnswer, now: Moment) {
        // An asked invoke's end is named by its reason (the feed says the operator said no).
        let outcome =
            if case let .failure(error) = result {
                [ErrorMessage.askedDenied, ErrorMessage.askTimeout].first { error.details?["reason"] == .string($0) } ?? error.code
            } else { "ok" }
        // A node's result is raw bytes, so its size is at hand; refusals are small.
        let size = if case let .success(.raw(bytes)) = result { bytes.count } else { 0 }
        out.append(.finished(waiter, outcome: outcome, seconds: now.timeIntervalSince(waiter.started), bytes: size))
        out.append(.answer(waiter.target, result))
        guard let slot = waiter.slot else { return }
        for joined in idempotency.finish(slot, result, keep: size <= Self.cacheableResultBytes, now: now) { out.append(.answer(joined, result)) }
    }

    // MARK: - Denials

    /// Whether to audit a denial now (nil: the same one was audited within the minute, counted),
    /// and how many came since the last time it was (for the entry).
    package mutating func denial(_ key: String, now: Moment) -> Int? {
        if let last = denials[key], now.timeIntervalSince(last.written) < 60 {
            denials[key]?.suppressed += 1
            return nil
        }
        let repeated = denials[key]?.suppressed ?? 0
        denials[key] = (now, 0)
        if denials.count > 4096 { denials = denials.filter { now.timeIntervalSince($0.value.written) < 60 } }
        return repeated
    }

    // MARK: - Plumbing

    private mutating func failAll(where predicate: (InFlight) -> Bool, code: String, _ message: String, retryable: Bool = true, now: Moment) {
        let gone = inFlight.values.filter(predicate).sorted { $0.invokeID < $1.invokeID }
        for entry in gone {
            remove(entry)
            finish(entry.waiter, .failure(ErrorMessage(code: code, message: message, details: details(entry), retryable: retryable)), now: now)
        }
    }

    private mutating func remove(_ entry: InFlight) {
        inFlight[entry.invokeID] = nil
        let left = perNode[entry.node, default: 1] - 1
        perNode[entry.node] = left > 0 ? left : nil
    }

    /// An invoke in flight ends in an error of the bridge's own, naming its node and command.
    private mutating func fail(_ entry: InFlight, _ code: String, _ message: String, extra: [String: JSONValue] = [:], retryable: Bool, now: Moment) {
        finish(entry.waiter, .failure(ErrorMessage(code: code, message: message, details: details(entry, extra), retryable: retryable)), now: now)
    }

    private func details(_ entry: InFlight, _ extra: [String: JSONValue] = [:]) -> JSONValue {
        .object(["nodeId": .string(entry.node.description), "command": .string(entry.waiter.command)].merging(extra) { $1 })
    }

    private static func json(_ error: ErrorMessage) -> JSONValue {
        var fields: [String: JSONValue] = ["code": .string(error.code), "message": .string(error.message)]
        if let details = error.details { fields["details"] = details }
        return .object(fields)
    }
}
