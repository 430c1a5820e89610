import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// Requests from the gateway or the operator's control socket (PROTOCOL.md §12.3): the same
/// methods, the same checks (`InvokeGate`), for both.
extension BridgeCore {
    /// The control socket's question: which paired.json does the running core hold? The CLI asks
    /// it after a revoke, block or deny, and reports success only when the answer is its own write.
    package static let storeApplied = "store.applied"

    /// Results bigger than this are relayed but not kept for idempotent retries.
    package static let cacheableResultBytes = 64 * 1024

    /// One request. The driver has made sure `lastState` is the store as it is now, so rules
    /// changed by `nodes allow|deny|revoke` a moment ago apply to this request, not the next.
    mutating func request(method: String, params: JSONValue?, from target: AnswerTarget, wall: Date) {
        let origin: InvokeRouter.Origin = if case .gateway = target { .gateway } else { .operator }
        do throws(ErrorMessage) {
            switch method {
            case GatewayMethod.nodeList:
                answer(target, .success(.value(.object(["nodes": .array(lastState.paired.nodes.map { JSONValue(encoding: describing(node: $0, wall: wall)) })]))))
            case GatewayMethod.nodeDescribe:
                let reference = try InvokeRequest.string("nodeId", in: params, method: method)!
                do { answer(target, .success(.value(JSONValue(encoding: describing(node: try lookUp(reference), wall: wall))))) } catch {
                    throw ErrorMessage(code: ErrorMessage.nodeNotFound, message: "\(error)", details: ["nodeId": .string(reference)])
                }
            case GatewayMethod.nodeInvoke:
                // Fail closed: rules that cannot be read are not rules to judge an invoke by (a
                // revoke written while the daemon could not read it must still hold).
                guard storeReadable else {
                    throw ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge cannot read its pairing store, so it runs nothing until it can",
                                       retryable: true, retryAfterMs: 1000)
                }
                invoke(try InvokeRequest(params: params), origin: origin, for: target, now: now, wall: wall)
            case Self.storeApplied where origin == .operator:
                // Answered after the driver compared paired.json with what the core holds (and read it if it changed).
                guard storeReadable else {
                    throw ErrorMessage(code: ErrorMessage.unavailable, message: storeProblem ?? "the bridge cannot read its pairing store")
                }
                answer(target, .success(.value(["version": .string(pairedVersion)])))
            case GatewayMethod.nodeInvokeCancel:
                answer(target, .success(.value(try cancelRequested(params, origin: origin, from: target))))
            default:
                throw ErrorMessage(code: ErrorMessage.unknownMethod, message: "unknown method \"\(method)\" (node.list, node.describe, node.invoke, node.invoke.cancel)")
            }
        } catch {
            answer(target, .failure(error))
        }
    }

    /// `node.invoke.cancel {nodeId, idempotencyKey | id}`: the asker's own invoke, named by its
    /// idempotency key or by the ID of its `node.invoke` request on this link.
    private mutating func cancelRequested(_ params: JSONValue?, origin: InvokeRouter.Origin, from target: AnswerTarget) throws(ErrorMessage) -> JSONValue {
        let method = GatewayMethod.nodeInvokeCancel
        let reference = try InvokeRequest.string("nodeId", in: params, method: method)!
        let key = try InvokeRequest.string("idempotencyKey", in: params, method: method, required: false)
        let id = try InvokeRequest.string("id", in: params, method: method, required: false)
        guard (key == nil) != (id == nil) else {
            throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method) takes idempotencyKey or id (one of them)")
        }
        guard let node = try? lookUp(reference) else {
            throw ErrorMessage(code: ErrorMessage.nodeNotFound, message: "no paired node \"\(reference)\"", details: ["nodeId": .string(reference)])
        }
        let waiting: AnswerTarget? = switch target {
            case let .gateway(generation, _): id.map { .gateway(generation: generation, requestID: $0) }
            default: nil  // the control socket names its invokes by key only
        }
        let found = cancel(node: node.nodeId, where: { waiter in
            if let key { return waiter.slot == "\(origin.rawValue)/\(key)" }
            return waiting != nil && waiter.target == waiting
        })
        return ["cancelled": .bool(found), "nodeId": .string(node.nodeId.description)]
    }

    /// Cancels the invoke to `node` whose waiter matches: one in flight (the node hears
    /// `invoke.cancel`) or one held for the node (it never runs). Its asker, and any retry joined
    /// to it, hears CANCELLED. False if there is none.
    mutating func cancel(node: Fingerprint, where matches: (Waiter) -> Bool) -> Bool {
        // Another node's invoke is not this cancel's to touch.
        if let requestID = waiters.first(where: { matches($0.value) })?.key, router.pending(requestID: requestID)?.nodeID == node.description,
           let (pending, outcome) = router.cancel(requestID: requestID) {
            send(InvokeCancel(id: pending.invokeID), to: pending.connection)
            complete([outcome])
            return true
        }
        let cancelled = held.cancel(node: node, where: matches)
        end(cancelled)
        return !cancelled.isEmpty
    }

    func describing(node: PairedNode, wall: Date) -> NodeDescription {
        NodeDescription(node, live: live[node.nodeId], policy: settings.policy, now: wall)
    }

    /// By ID through the index, else by display name.
    func lookUp(_ reference: String) throws -> PairedNode {
        if let id = Fingerprint(reference), let node = paired[id] { return node }
        return try lastState.node(matching: reference)
    }

    /// Retries with the same idempotency key run the command once.
    mutating func invoke(_ request: InvokeRequest, origin: InvokeRouter.Origin, for target: AnswerTarget, now: Moment, wall: Date) {
        guard let key = request.idempotencyKey else {
            run(request, origin: origin, for: target, slot: nil, now: now, wall: wall)
            return
        }
        let slot = "\(origin.rawValue)/\(key)"
        let node = (try? lookUp(request.node))?.nodeId.description ?? request.node
        switch idempotency.start(slot, request: request.digest, node: node, now: now) {
        case let .answered(earlier):
            answer(target, earlier)
        case .conflict:
            answer(target, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "idempotencyKey \"\(key)\" was used for a different request",
                                                 details: ["nodeId": .string(request.node), "command": .string(request.command)], retryable: false)))
        case .wait:
            if idempotency.join(slot, target) {
                logger.info("idempotent retry joined the invoke under way", metadata: ["node": "\(node)", "command": "\(request.command)"])
            } else {
                answer(target, .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the first attempt vanished", retryable: true)))
            }
        case .run:
            run(request, origin: origin, for: target, slot: slot, now: now, wall: wall)
        }
    }

    /// Decides and relays, refuses, or holds. Returns `held` back when it still cannot run.
    @discardableResult
    private mutating func run(_ request: InvokeRequest, origin: InvokeRouter.Origin, for target: AnswerTarget, slot: String?, now: Moment, wall: Date,
                              held heldEntry: HeldInvokes.Entry? = nil) -> HeldInvokes.Entry? {
        let node = Result { try lookUp(request.node) }
        let found = try? node.get()
        let session = found.flatMap { pairedConnection($0.nodeId) }.map {
            InvokeGate.Session(connection: $0.id, foreground: $0.foreground, inFlight: router.inFlight(forNode: $0.nodeId.description))
        }
        // A held invoke keeps the waiter it was asked with: its latency counts the wait.
        let waiter = heldEntry?.waiter ?? Waiter(target: target, slot: slot, command: request.command, started: now)
        let canvas = InvokeGate.CanvasPlace(relayBase: canvasRelayBase(for: found.flatMap { pairedConnection($0.nodeId) }),
                                            upstreamOrigins: canvasRelay?.upstreamOrigins ?? [])
        switch gate.decide(request, node: node, rules: found.flatMap { rules[$0.nodeId] }, session: session, buckets: &buckets, now: now, canvas: canvas) {
        case let .refuse(error, denied):
            if let denied, let node = found {
                logger.notice("invoke denied: \(denied)", metadata: ["node": "\(node.nodeId)", "name": "\(node.details.displayName)",
                                                                     "command": "\(request.command)", "origin": "\(origin.rawValue)"])
                recordDenial(by: origin.rawValue, node: node.nodeId, what: request.command, reason: denied.code, now: now, wall: wall)
            }
            finish(.failure(error), for: waiter, now: now)
        case let .hold(node, refusal):
            if var entry = heldEntry {
                entry.refusal = refusal
                return entry
            }
            hold(HeldInvokes.Entry(request: request, origin: origin, waiter: waiter,
                                   expires: now.addingTimeInterval(Double(request.holdMs ?? 0) / 1000),
                                   bytes: request.command.utf8.count + (request.params?.serialized.count ?? 0), refusal: refusal), node: node)
        case let .relay(node, connection, timeoutMs, params):
            nextRequest += 1
            let requestID = "r\(nextRequest)"
            switch router.start(requestID: requestID, nodeID: node.nodeId.description, connection: connection, command: request.command, params: params,
                                timeout: Double(timeoutMs) / 1000, origin: origin, now: now) {
            case let .failure(error):
                finish(.failure(error), for: waiter, now: now)
            case let .success(message):
                waiters[requestID] = waiter
                arm(now.addingTimeInterval(Double(timeoutMs) / 1000))
                send(message, to: connection)
                if let heldEntry {
                    logger.info("held invoke delivered", metadata: ["node": "\(node.nodeId)", "command": "\(request.command)",
                                                                   "waitedMs": "\(Int(now.timeIntervalSince(heldEntry.waiter.started) * 1000))"])
                }
            }
        }
        return nil
    }

    // MARK: - Held invokes (`HeldInvokes` decides, this carries it out)

    /// A new held invoke: queued behind its node's others, or refused when a bound is reached.
    private mutating func hold(_ entry: HeldInvokes.Entry, node: PairedNode) {
        switch held.hold(entry, node: node, hook: settings.wake, now: now) {
        case let .refused(error):
            finish(.failure(error), for: entry.waiter, now: now)
        case let .held(wake):
            logger.info("invoke held", metadata: ["node": "\(node.nodeId)", "command": "\(entry.request.command)", "why": "\(entry.refusal.code)",
                                                 "maxMs": "\(entry.request.holdMs ?? 0)"])
            metrics.held(held.count)
            arm(entry.expires)
            if let wake { actions.append(.wake(wake)) }
        }
    }

    /// Held invokes that stop waiting without running: each asker hears why.
    mutating func end(_ endings: [HeldInvokes.Ending]) {
        guard !endings.isEmpty else { return }
        for ending in endings { finish(.failure(ending.error), for: ending.waiter, now: now) }
        metrics.held(held.count)
    }

    /// Runs what waits for `node`, oldest first, as far as it can now: past the node's limit of
    /// invokes in flight the rest keep waiting (a result coming back runs the next).
    mutating func deliverHeld(_ node: Fingerprint, now: Moment, wall: Date) {
        // Unreadable rules run nothing: held invokes wait for the store (or their expiry).
        guard sessions[node] != nil, storeReadable else { return }
        let entries = held.take(node: node)
        var back: [HeldInvokes.Entry] = []
        for (index, entry) in entries.enumerated() {
            if router.inFlight(forNode: node.description) >= settings.limits[.maxConcurrentInvokes] {
                back += entries[index...]
                break
            }
            if let again = run(entry.request, origin: entry.origin, for: entry.waiter.target, slot: entry.waiter.slot, now: now, wall: wall, held: entry) {
                back.append(again)
            }
        }
        held.putBack(back, node: node)
        metrics.held(held.count)
    }

    /// The operator's control-socket client that asked these went away: their held invokes are
    /// dropped (answered to nobody), so nothing runs later that nobody waits for.
    mutating func controlLeft(_ tokens: Set<Int>) {
        let left = held.askersLeft(tokens)
        for ending in left { logger.info("held invoke dropped: its asker left", metadata: ["command": "\(ending.entry.request.command)"]) }
        end(left)
    }

    /// A node answered an invoke. Oversized results are refused whole, before they reach anyone.
    mutating func resultReceived(_ result: InvokeResult.Received, size: Int, from connection: Connection, now: Moment) {
        let limit = settings.limits[.maxResultBytes]
        let outcome = router.received(result, from: connection.nodeId.description, connection: connection.id, now: now, size: size, limit: limit)
        metrics.relayed(bytes: size, toGateway: true)
        if case .complete(_, .failed(let error)) = outcome, error.code == ErrorMessage.payloadTooLarge {
            logger.notice("result too large: \(size) bytes (limit \(limit))", metadata: meta(connection))
        }
        if case let .dropped(invokeID, _, reason) = outcome {
            metrics.resultDropped(reason.rawValue)
            // The first in a quiet minute is logged; the rest are counted into the tick's summary.
            guard connection.droppedResults == 0, now.timeIntervalSince(connection.summarised) >= 60 else {
                connections[connection.id]?.droppedResults += 1
                return
            }
            connections[connection.id]?.summarised = now
            logger.notice("dropped a result: \(reason)", metadata: meta(connection, ["invoke": "\(invokeID)"]))
            return
        }
        complete([outcome])
    }

    /// The earliest deadline of anything in flight is due: invokes and gateway calls time out.
    mutating func timerFired() {
        armedDeadline = nil
        complete(router.expire(now: now))
        expireCalls(now: now)
        end(held.expire(now: now))
        let next = [router.nextDeadline, gateway.nextDeadline, held.nextDeadline].compactMap { $0 }.min()
        if let next { arm(next) }
    }

    /// One timer for everything in flight, set for the earliest deadline; a new deadline only
    /// moves it if it is sooner.
    mutating func arm(_ deadline: Moment) {
        if let armed = armedDeadline, armed <= deadline { return }
        armedDeadline = deadline
        actions.append(.armTimer(deadline))
    }

    /// Hands finished invokes to whoever waits for them; logs results that came too late.
    mutating func complete(_ outcomes: [InvokeRouter.Outcome]) {
        for outcome in outcomes {
            switch outcome {
            case let .complete(requestID, result):
                guard let waiter = waiters.removeValue(forKey: requestID) else { continue }
                switch result {
                case let .ok(payload): finish(.success(payload), for: waiter, now: self.now)
                case let .failed(error): finish(.failure(error), for: waiter, now: self.now)
                }
            case let .dropped(invokeID, nodeID, reason):
                logger.notice("dropped a result: \(reason)", metadata: ["node": "\(nodeID)", "invoke": "\(invokeID)"])
                metrics.resultDropped(reason.rawValue)
            }
        }
    }

    /// Answers the asker, and every retry that waited on the same idempotency key.
    mutating func finish(_ result: InvokeAnswer, for waiter: Waiter, now: Moment) {
        let outcome = if case let .failure(error) = result { error.code } else { "ok" }
        metrics.invoke(command: waiter.command, outcome: outcome, seconds: now.timeIntervalSince(waiter.started))
        answer(waiter.target, result)
        guard let slot = waiter.slot else { return }
        // A node's result is raw bytes, so its size is at hand; refusals are small.
        let size = if case let .success(.raw(bytes)) = result { bytes.count } else { 0 }
        for joined in idempotency.finish(slot, result, keep: size <= Self.cacheableResultBytes, now: now) { answer(joined, result) }
    }

    /// An answer goes only to the link generation that asked: an answer for a link that is gone
    /// is dropped, never handed to a later link that may reuse the request ID.
    mutating func answer(_ target: AnswerTarget, _ result: InvokeAnswer) {
        if case let .gateway(generation, requestID) = target, !gateway.isCurrent(generation) {
            logger.debug("dropped the answer to a request of an earlier gateway link", metadata: ["id": "\(requestID)", "link": "\(generation)"])
            return
        }
        actions.append(.answer(target, result))
    }

    /// Writes the denial to the audit log. The same denial repeated within a minute is counted,
    /// not written each time, so a misbehaving gateway cannot flood the log or the disk; the count
    /// goes into the next entry.
    mutating func recordDenial(_ event: String = "invoke.denied", by actor: String, node: Fingerprint, what command: String, reason: String,
                               now: Moment, wall: Date) {
        let key = "\(event)/\(actor)/\(node)/\(command)/\(reason)"
        if let last = recentDenials[key], now.timeIntervalSince(last.written) < 60 {
            recentDenials[key]?.suppressed += 1
            return
        }
        let repeated = recentDenials[key]?.suppressed ?? 0
        recentDenials[key] = (now, 0)
        if recentDenials.count > 4096 { recentDenials = recentDenials.filter { now.timeIntervalSince($0.value.written) < 60 } }
        actions.append(.audit([AuditEntry(time: wall, event: event, actor: actor, nodeId: node.description,
                                          detail: "\(command): \(reason)" + (repeated > 0 ? " (and \(repeated) more in the minute before)" : ""))]))
    }
}
