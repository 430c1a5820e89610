import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState

/// `node.invoke`, from the gateway or the operator's control socket: the same checks, in the same
/// order, for both (PROTOCOL.md §12.3): the node exists, the access rules allow it, the node is
/// connected and (for foreground commands) in front, the rate limits hold. Only then does the
/// command cross the LAN.
extension Bridge {
    public struct InvokeRequest: Sendable {
        public var node: String
        public var command: String
        public var params: JSONValue?
        public var timeoutMs: Int?
        public var idempotencyKey: String?
        public init(node: String, command: String, params: JSONValue? = nil, timeoutMs: Int? = nil, idempotencyKey: String? = nil) {
            (self.node, self.command, self.params, self.timeoutMs, self.idempotencyKey) = (node, command, params, timeoutMs, idempotencyKey)
        }

        /// What an idempotency key is bound to: the node as named, the command and the parameters.
        var digest: [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let canonical = (try? encoder.encode([JSONValue.string(node), .string(command), params ?? .null])) ?? Data()
            return SHA256.hash(Array(canonical))
        }
    }

    typealias Answer = Result<InvokePayload, ErrorMessage>

    /// Results bigger than this are relayed but not kept for idempotent retries.
    static let cacheableResultBytes = 64 * 1024

    func invoke(_ request: InvokeRequest, origin: InvokeRouter.Origin) async -> Answer {
        guard let key = request.idempotencyKey else { return await run(request, origin: origin) }
        let slot = "\(origin.rawValue)/\(key)"
        switch idempotency.start(slot, request: request.digest, now: Date()) {
        case let .answered(answer):
            return answer
        case .conflict:
            return .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "idempotencyKey \"\(key)\" was used for a different request",
                                         details: ["nodeId": .string(request.node), "command": .string(request.command)], retryable: false))
        case .wait:
            return await withCheckedContinuation { idempotency.join(slot, $0) }
        case .run:
            let answer = await run(request, origin: origin)
            // A node's result is raw bytes, so its size is at hand; refusals are small.
            let size = if case let .success(.raw(bytes)) = answer { bytes.count } else { 0 }
            idempotency.finish(slot, answer, keep: size <= Self.cacheableResultBytes, now: Date())
            return answer
        }
    }

    private func run(_ request: InvokeRequest, origin: InvokeRouter.Origin) async -> Answer {
        switch await check(request, origin: origin) {
        case let .failure(error): return .failure(error)
        case let .success((node, connection, timeoutMs)):
            return await relay(request, to: node, on: connection, timeoutMs: timeoutMs, origin: origin)
        }
    }

    /// Everything decided before anything crosses the LAN.
    private func check(_ request: InvokeRequest, origin: InvokeRouter.Origin) async -> Result<(PairedNode, Connection, Int), ErrorMessage> {
        let limits = settings.limits
        let command = request.command
        guard (try? CommandPattern(command)) != nil, !command.hasSuffix("*") else {
            return .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "\"\(command)\" is not a command name"))
        }
        let timeoutMs = request.timeoutMs ?? limits.defaultTimeoutMs
        guard (1...limits.maxTimeoutMs).contains(timeoutMs) else {
            return .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "timeoutMs must be between 1 and \(limits.maxTimeoutMs)"))
        }
        // Rules changed by `nodes allow|deny|revoke` a moment ago apply to this invoke, not the next.
        await refreshIfChanged()

        let node: PairedNode
        do { node = try lookUp(request.node) } catch {
            return .failure(ErrorMessage(code: ErrorMessage.nodeNotFound, message: "\(error)",
                                         details: ["nodeId": .string(request.node), "command": .string(command)]))
        }
        let details: JSONValue = ["nodeId": .string(node.nodeId.description), "command": .string(command)]
        let connection = pairedConnection(node.nodeId)
        // An offline node counts as in front: the rules are checked before connectedness, so a
        // denied command says "forbidden" whether or not the node is there.
        let decision = settings.policy.decide(command, rules: rules[node.nodeId] ?? CompiledRules(node.access), declared: node.details.commands,
                                              flags: node.details.flags, foreground: connection?.foreground ?? true)
        if case let .deny(reason) = decision {
            logger.notice("invoke denied: \(reason)", metadata: ["node": "\(node.nodeId)", "name": "\(node.details.displayName)", "command": "\(command)", "origin": "\(origin.rawValue)"])
            recordDenial(node: node.nodeId, command: command, reason: reason, origin: origin)
            return .failure(ErrorMessage(code: ErrorMessage.forbidden, message: "\(command): \(reason)",
                                         details: details.merging(["reason": .string(reason.code)]), retryable: false))
        }
        guard let connection else {
            return .failure(ErrorMessage(code: ErrorMessage.nodeNotConnected, message: "\(node.details.displayName) is not connected",
                                         details: details, retryable: true))
        }
        if case let .backgroundUnavailable(retryAfterMs) = decision {
            return .failure(ErrorMessage(code: ErrorMessage.backgroundUnavailable, message: "\(node.details.displayName) is in the background; \(command) needs the foreground",
                                         details: details, retryable: true, retryAfterMs: retryAfterMs))
        }
        if snapshotCommands.contains(where: { $0.matches(command) }),
           case let .limited(retryAfterMs) = take(.snapshot, node: node.nodeId) {
            return .failure(ErrorMessage(code: ErrorMessage.rateLimited, message: "too many snapshots from this node; at most \(limits.snapshotsPerMinute) a minute",
                                         details: details.merging(["limit": "snapshotsPerMinute"]), retryable: true, retryAfterMs: retryAfterMs))
        }

        return .success((node, connection, timeoutMs))
    }

    private func relay(_ request: InvokeRequest, to node: PairedNode, on connection: Connection, timeoutMs: Int,
                       origin: InvokeRouter.Origin) async -> Answer {
        nextRequest += 1
        let requestID = "r\(nextRequest)"
        let message: Invoke
        switch router.start(requestID: requestID, nodeID: node.nodeId.description, command: request.command, params: request.params,
                            timeout: Double(timeoutMs) / 1000, origin: origin, now: Date()) {
        case let .failure(error): return .failure(error)
        case let .success(invoke): message = invoke
        }
        let reply = Reply<InvokeRouter.Result>()
        waiters[requestID] = reply
        armTimer(for: Date().addingTimeInterval(Double(timeoutMs) / 1000))
        await send(message, to: connection)
        let result = await reply.value
        switch result {
        case let .ok(payload): return .success(payload)
        case let .failed(error): return .failure(error)
        }
    }

    /// A node answered an invoke. Oversized results are refused whole, before they reach anyone.
    func resultReceived(_ result: InvokeResult.Received, size: Int, from connection: Connection) {
        let limit = settings.limits.maxResultBytes
        let outcome = router.received(result, from: connection.nodeId.description, now: Date(), size: size, limit: limit)
        if case .complete(_, .failed(let error)) = outcome, error.code == ErrorMessage.payloadTooLarge {
            logger.notice("result too large: \(size) bytes (limit \(limit))", metadata: meta(connection))
        }
        complete([outcome])
    }

    /// One timer for every invoke in flight, set for the earliest deadline; a new invoke only
    /// moves it if it is due sooner.
    func armTimer(for next: Date) {
        if let armed = timerDeadline, armed <= next { return }
        timer?.cancel()
        timerDeadline = next
        timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(max(0, Int((next.timeIntervalSinceNow * 1000).rounded(.up)))))
            guard !Task.isCancelled else { return }
            await self?.timerFired()
        }
    }

    private func timerFired() {
        timerDeadline = nil
        timer = nil
        complete(router.expire(now: Date()))
        if let next = router.nextDeadline { armTimer(for: next) }
    }

    /// Hands finished invokes to whoever waits for them; logs results that came too late.
    func complete(_ outcomes: [InvokeRouter.Outcome]) {
        for outcome in outcomes {
            switch outcome {
            case let .complete(requestID, result):
                waiters.removeValue(forKey: requestID)?.fulfill(result)
            case let .dropped(invokeID, nodeID, reason):
                logger.notice("dropped a result: \(reason)", metadata: ["node": "\(nodeID)", "invoke": "\(invokeID)"])
            }
        }
    }

    func pairedConnection(_ id: Fingerprint) -> Connection? {
        sessions[id].flatMap { connections[$0] }.flatMap { $0.isPaired ? $0 : nil }
    }

    /// By ID through the index, else by display name.
    func lookUp(_ reference: String) throws -> PairedNode {
        if let id = Fingerprint(reference), let node = paired[id] { return node }
        return try lastState.node(matching: reference)
    }

    enum Limit: String { case snapshot, agent, systemEvent, event, eventBytes, state }

    /// `count` tokens (one by default) from the node's bucket for `limit`; each bucket holds a
    /// fifth of its minute's allowance.
    func take(_ limit: Limit, node: Fingerprint, count: Int = 1) -> TokenBucket.TakeResult {
        let limits = settings.limits
        let perMinute = switch limit {
        case .snapshot: limits.snapshotsPerMinute
        case .agent: limits.agentPerMinute
        case .systemEvent: limits.systemEventsPerMinute
        case .event: limits.eventsPerMinute
        case .eventBytes: limits.eventBytesPerMinute
        case .state: limits.statesPerMinute
        }
        let key = "\(limit.rawValue)/\(node)"
        let now = Date()
        var bucket = buckets[key] ?? TokenBucket(capacity: max(Double(count), Double(perMinute) / 5), perSecond: Double(perMinute) / 60, now: now)
        let result = bucket.take(Double(count), now: now)
        buckets[key] = bucket
        return result
    }

    /// Writes the denial to the audit log. The same denial repeated within a minute is counted,
    /// not written each time, so a misbehaving gateway cannot flood the log or the disk; the count
    /// goes into the next entry.
    private func recordDenial(node: Fingerprint, command: String, reason: AccessDecision.DenyReason, origin: InvokeRouter.Origin) {
        let key = "\(origin.rawValue)/\(node)/\(command)/\(reason.code)"
        let now = Date()
        if let last = recentDenials[key], now.timeIntervalSince(last.written) < 60 {
            recentDenials[key]?.suppressed += 1
            return
        }
        let repeated = recentDenials[key]?.suppressed ?? 0
        recentDenials[key] = (now, 0)
        if recentDenials.count > 4096 { recentDenials = recentDenials.filter { now.timeIntervalSince($0.value.written) < 60 } }
        do {
            try store.record([AuditEntry(time: now, event: "invoke.denied", actor: origin.rawValue, nodeId: node.description,
                                         detail: "\(command): \(reason.code)" + (repeated > 0 ? " (and \(repeated) more in the minute before)" : ""))])
        } catch {
            logger.warning("cannot write the audit log: \(error)")
        }
    }
}

extension JSONValue {
    func merging(_ other: [String: JSONValue]) -> JSONValue {
        guard case let .object(fields) = self else { return self }
        return .object(fields.merging(other) { $1 })
    }
}
