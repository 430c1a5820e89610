import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// Requests from the gateway or the operator's control socket (PROTOCOL.md §12.3): the same
/// methods, the same checks (`InvokeGate`), for both.
extension BridgeCore {
    /// One request. The driver has made sure `lastState` is the store as it is now, so rules
    /// changed by `nodes allow|deny|revoke` a moment ago apply to this request, not the next.
    mutating func request(method: String, params: JSONValue?, from target: AnswerTarget, wall: Date) {
        let origin: InvokeBook.Origin = if case .gateway = target { .gateway } else { .operator }
        do throws(ErrorMessage) {
            // The table says who may call what; a method the caller may not call is unknown to it.
            guard let known = ControlMethod(rawValue: method), known.spec.answeredBy == .core,
                known.spec.callers == .gatewayAndOperator || origin == .operator
            else {
                let names = ControlMethod.gatewayMethods.map(\.name).joined(separator: ", ")
                throw ErrorMessage(code: ErrorMessage.unknownMethod, message: "unknown method \"\(SafeText.escape(String(method.prefix(64))))\" (\(names))")
            }
            switch known {
            case .nodeList:
                answer(
                    target,
                    .success(.value(.object(["nodes": .array(try lastState.paired.nodes.map { node throws(ErrorMessage) in try .answer(describing(node: node, wall: wall)) })]))))
            case .nodeDescribe:
                let reference = try InvokeRequest.string("nodeId", in: params, method: method)!
                let node: PairedNode
                do { node = try lookUp(reference) } catch {
                    throw ErrorMessage(code: ErrorMessage.nodeNotFound, message: "\(error)", details: ["nodeId": .string(reference)])
                }
                answer(target, .success(.value(try .answer(describing(node: node, wall: wall)))))
            case .nodeInvoke:
                // Fail closed: rules that cannot be read are not rules to judge an invoke by (a
                // revoke written while the daemon could not read it must still hold).
                guard storeReadable else {
                    throw ErrorMessage(
                        code: ErrorMessage.unavailable, message: "the bridge cannot read its pairing store, so it runs nothing until it can",
                        retryable: true, retryAfterMs: 1000)
                }
                invoke(try InvokeRequest(params: params), origin: origin, for: target, now: now, wall: wall)
            case .storeApplied:
                // Answered after the driver compared paired.json with what the core holds (and read it if it changed).
                guard storeReadable else {
                    throw ErrorMessage(code: ErrorMessage.unavailable, message: storeProblem ?? "the bridge cannot read its pairing store")
                }
                answer(target, .success(.value(["version": .string(pairedVersion)])))
            case .activityList:
                answer(target, .success(.value(try activityList(params))))
            case .activityCounts:
                let (nodes, coversDay) = activity.counts(at: wall)
                answer(target, .success(.value(["nodes": try .answer(nodes), "coversDay": .bool(coversDay)])))
            case .askList:
                answer(target, .success(.value(try askList(wall: wall))))
            case .askAnswer:
                answer(target, .success(.value(try answerAsk(params, wall: wall))))
            case .nodeInvokeCancel:
                answer(target, .success(.value(try cancelRequested(params, origin: origin, from: target))))
            case .canvasRotateCertificate, .gatewayReconnect, .consoleLogin, .consoleSessions, .consoleLogoutAll:
                throw ErrorMessage(code: ErrorMessage.unknownMethod, message: "unknown method \"\(method)\"")  // not the core's: excluded above
            }
        } catch {
            answer(target, .failure(error))
        }
    }

    /// One record per finished invoke: whose, what, who asked, how it ended.
    mutating func recordActivity(_ waiter: InvokeBook.Waiter, outcome: String, seconds: Double, bytes: Int) {
        let asker =
            switch waiter.target {
            case .gateway: "gateway"
            case .control: "operator"
            case .openClaw: "openclaw"
            }
        let node = waiter.node.flatMap { paired[$0] }  // the index: a lookup, not a scan per invoke
        activity.append(
            time: wall, nodeId: waiter.node?.description, name: node?.details.displayName, command: waiter.command, asker: asker,
            outcome: outcome, durationMs: Int((seconds * 1000).rounded()), resultBytes: bytes, note: waiter.note)
    }

    /// `activity.list {since?, node?, command?, limit?}`: oldest first, at most `limit` (1000 at most).
    private func activityList(_ params: JSONValue?) throws(ErrorMessage) -> JSONValue {
        let method = ControlMethod.activityList.name
        let since = try InvokeRequest.int("since", in: params, method: method) ?? 0
        let limit = min(try InvokeRequest.int("limit", in: params, method: method) ?? 1000, 1000)
        let node = try InvokeRequest.string("node", in: params, method: method, required: false)
        let command = try InvokeRequest.string("command", in: params, method: method, required: false)
        let pattern: CommandPattern?
        do { pattern = try command.map { try CommandPattern($0) } } catch {
            throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method): command is not a command name or pattern")
        }
        let records = activity.records(since: since, node: node, command: pattern, limit: max(limit, 0))
        return ["records": try .answer(records), "next": .number(Double(activity.nextSeq - 1)), "capacity": .number(Double(activity.capacity))]
    }

    /// `node.invoke.cancel {nodeId, idempotencyKey | id}`: the asker's own invoke, named by its
    /// idempotency key or by the ID of its `node.invoke` request on this link.
    private mutating func cancelRequested(_ params: JSONValue?, origin: InvokeBook.Origin, from target: AnswerTarget) throws(ErrorMessage) -> JSONValue {
        let method = ControlMethod.nodeInvokeCancel.name
        let reference = try InvokeRequest.string("nodeId", in: params, method: method)!
        let key = try InvokeRequest.string("idempotencyKey", in: params, method: method, required: false)
        let id = try InvokeRequest.string("id", in: params, method: method, required: false)
        guard (key == nil) != (id == nil) else {
            throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method) takes idempotencyKey or id (one of them)")
        }
        guard let node = try? lookUp(reference) else {
            throw ErrorMessage(code: ErrorMessage.nodeNotFound, message: "no paired node \"\(reference)\"", details: ["nodeId": .string(reference)])
        }
        let waiting: AnswerTarget? =
            switch target {
            case let .gateway(generation, _): id.map { .gateway(generation: generation, requestID: $0) }
            default: nil  // the control socket names its invokes by key only
            }
        let slot = key.map { InvokeBook.Slot(origin, $0) }
        let found = cancel(node: node.nodeId, where: { waiter in slot != nil ? waiter.slot == slot : waiting != nil && waiter.target == waiting })
        return ["cancelled": .bool(found), "nodeId": .string(node.nodeId.description)]
    }

    /// Cancels the invoke to `node` whose waiter matches, in flight or held (`InvokeBook.cancel`).
    mutating func cancel(node: Fingerprint, where matches: (InvokeBook.Waiter) -> Bool) -> Bool {
        let found = book.cancel(node: node, where: matches, now: now)
        return found
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
    mutating func invoke(_ request: InvokeRequest, origin: InvokeBook.Origin, for target: AnswerTarget, now: Moment, wall: Date) {
        // The node is looked up once for the whole path (the key's slot, the gate, the book).
        let found = Result { try lookUp(request.node) }
        guard let key = request.idempotencyKey else {
            run(request, origin: origin, for: target, slot: nil, wall: wall, node: found)
            return
        }
        let slot = InvokeBook.Slot(origin, key)
        let node = (try? found.get())?.nodeId.description ?? request.node
        switch book.admit(slot, request: request.digest, node: node, target: target, now: now) {
        case let .answered(earlier):
            answer(target, earlier)
        case .conflict:
            answer(
                target,
                .failure(
                    ErrorMessage(
                        code: ErrorMessage.invalidRequest, message: "idempotencyKey \"\(key)\" was used for a different request",
                        details: ["nodeId": .string(request.node), "command": .string(request.command)], retryable: false)))
        case .joined:
            logger.info("idempotent retry joined the invoke under way", metadata: ["node": "\(node)", "command": "\(request.command)"])
        case .vanished:
            answer(target, .failure(ErrorMessage(code: ErrorMessage.unavailable, message: "the first attempt vanished", retryable: true)))
        case .run:
            run(request, origin: origin, for: target, slot: slot, wall: wall, node: found)
        }
    }

    /// Decides and relays, refuses, holds or asks the operator. Returns `held` back when it still
    /// cannot run. `asked`: the operator said yes to it.
    @discardableResult
    mutating func run(
        _ request: InvokeRequest, origin: InvokeBook.Origin, for target: AnswerTarget, slot: InvokeBook.Slot?, wall: Date,
        held heldEntry: HeldInvokes.Entry? = nil, asked askedEntry: AskedInvokes.Entry? = nil, node looked: Result<PairedNode, any Error>? = nil
    ) -> HeldInvokes.Entry? {
        let node = looked ?? Result { try lookUp(request.node) }
        let found = try? node.get()
        let connection = found.flatMap { pairedConnection($0.nodeId) }
        let session = connection.map {
            InvokeGate.Session(connection: $0.id, foreground: $0.foreground, inFlight: book.inFlight(for: $0.nodeId), backlogged: $0.backlogged)
        }
        // A held invoke keeps the waiter it was asked with: its latency counts the wait.
        let waiter =
            heldEntry?.waiter ?? askedEntry?.waiter
            ?? InvokeBook.Waiter(target: target, slot: slot, command: request.command, started: now, node: found?.nodeId)
        let approved =
            askedEntry != nil || heldEntry?.approved == true || found.map { book.asked.granted($0.nodeId, request.command, now: now) } ?? false
        let canvas = InvokeGate.CanvasPlace(
            relayBase: canvasRelayBase(for: connection),
            upstreamOrigins: canvasRelay?.upstreamOrigins ?? [])
        switch gate.decide(
            request, node: node, rules: found.flatMap { rules[$0.nodeId] }, session: session, buckets: &buckets, now: now, canvas: canvas,
            approved: approved)
        {
        case let .ask(node, rule):
            ask(request, origin: origin, waiter: waiter, node: node, rule: rule, wall: wall)
        case let .refuse(error, denied):
            if let denied, let node = found {
                logger.notice(
                    "invoke denied: \(denied)",
                    metadata: [
                        "node": "\(node.nodeId)", "name": "\(node.details.displayName)",
                        "command": "\(request.command)", "origin": "\(origin.rawValue)",
                    ])
                recordDenial(by: origin.rawValue, node: node.nodeId, what: request.command, reason: denied.code, wall: wall)
            }
            var waiter = waiter
            if let denied { waiter.note = waiter.note.map { "\($0); \(denied)" } ?? "\(denied)" }
            book.finish(waiter, .failure(error), now: now)
        case let .hold(node, refusal):
            if var entry = heldEntry {
                entry.refusal = refusal
                return entry
            }
            let entry = HeldInvokes.Entry(
                request: request, origin: origin, waiter: waiter, expires: now.adding(milliseconds: request.holdMs ?? 0),
                bytes: request.command.utf8.count + (request.params?.serialized.count ?? 0), refusal: refusal, approved: askedEntry != nil)
            if case let .held(wake) = book.hold(entry, node: node, hook: settings.wake, now: now) {
                logger.info(
                    "invoke held",
                    metadata: [
                        "node": "\(node.nodeId)", "command": "\(request.command)", "why": "\(refusal.code)",
                        "maxMs": "\(request.holdMs ?? 0)",
                    ])
                if let wake { actions.append(.wake(wake)) }
            }
        case let .relay(node, connection, timeoutMs, params):
            book.send(
                node: node.nodeId, connection: connection, command: request.command, params: params, timeoutMs: timeoutMs, origin: origin,
                waiter: waiter, now: now)
            if let heldEntry {
                logger.info(
                    "held invoke delivered",
                    metadata: [
                        "node": "\(node.nodeId)", "command": "\(request.command)",
                        "waitedMs": "\(Int(now.timeIntervalSince(heldEntry.waiter.started) * 1000))",
                    ])
            }
        }
        return nil
    }

    /// Runs what waits for `node`, oldest first, as far as it can now: past the node's limit of
    /// invokes in flight the rest keep waiting (a result coming back runs the next).
    mutating func deliverHeld(_ node: Fingerprint, wall: Date) {
        // Unreadable rules run nothing: held invokes wait for the store (or their expiry).
        guard sessions[node] != nil, storeReadable else { return }
        let entries = book.takeHeld(node)
        var back: [HeldInvokes.Entry] = []
        for (index, entry) in entries.enumerated() {
            if book.inFlight(for: node) >= settings.limits[.maxConcurrentInvokes] {
                back += entries[index...]
                break
            }
            if let again = run(entry.request, origin: entry.origin, for: entry.waiter.target, slot: entry.waiter.slot, wall: wall, held: entry) {
                back.append(again)
            }
        }
        book.putBack(back, node: node)
    }

    /// The operator's control-socket client that asked these went away: their held invokes are
    /// dropped (answered to nobody), so nothing runs later that nobody waits for.
    mutating func controlLeft(_ tokens: Set<Int>) {
        for command in book.askersLeft(tokens, now: now) { logger.info("held invoke dropped: its asker left", metadata: ["command": "\(command)"]) }
    }

    /// A node answered an invoke. Oversized results are refused whole, before they reach anyone.
    mutating func resultReceived(_ result: InvokeResult.Received, size: Int, from connection: Connection) {
        let limit = settings.limits[.maxResultBytes]
        metrics.relayed(bytes: size, toGateway: true)
        if result.ok, size > limit { logger.notice("result too large: \(size) bytes (limit \(limit))", metadata: meta(connection)) }
        if let reason = book.received(result, from: connection.nodeId, connection: connection.id, size: size, limit: limit, now: now) {
            metrics.resultDropped(reason.rawValue)
            // The first in a quiet minute is logged; the rest are counted into the tick's summary.
            if connection.droppedResults == 0, now.timeIntervalSince(connection.summarised) >= 60 {
                connections[connection.id]?.summarised = now
                logger.notice("dropped a result: \(reason)", metadata: meta(connection, ["invoke": "\(result.id)"]))
            } else {
                connections[connection.id]?.droppedResults += 1
            }
        }
    }

    /// The earliest deadline of anything in flight is due: invokes and gateway calls time out.
    mutating func timerFired() {
        book.expire(now: now)
        expireCalls(now: now)
        if let next = gateway.nextDeadline { book.arm(next) }
    }

    /// One timer for everything in flight, set for the earliest deadline.
    mutating func arm(_ deadline: Moment) {
        book.arm(deadline)
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
    mutating func recordDenial(_ event: String = "invoke.denied", by actor: String, node: Fingerprint, what command: String, reason: String, wall: Date) {
        guard let repeated = book.denial("\(event)/\(actor)/\(node)/\(command)/\(reason)", now: now) else { return }
        actions.append(
            .audit([
                AuditEntry(
                    time: wall, event: event, actor: actor, nodeId: node.description,
                    detail: "\(command): \(reason)" + (repeated > 0 ? " (and \(repeated) more in the minute before)" : ""))
            ]))
    }
}

extension JSONValue {
    /// A value the core answers with, as JSON: one that cannot be encoded is an error its asker
    /// hears, never a `null` in its place.
    static func answer(_ value: some Encodable) throws(ErrorMessage) -> JSONValue {
        do { return try JSONValue(encoding: value) } catch {
            throw ErrorMessage(code: ErrorMessage.unavailable, message: "the bridge could not encode its answer: \(error)")
        }
    }
}
