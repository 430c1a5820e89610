import FoundationEssentials
import LanbridgeProtocol
import LanbridgeState

/// The gateway link as the core sees it: which generation is up, and the calls nodes have made
/// through it that wait for an answer.
package struct GatewayLinkState {
    /// Bumped by the driver for every link it dials.
    package private(set) var generation = 0
    package private(set) var up = false
    /// Whether the bridge has a gateway at all.
    package var configured = false
    /// The gateway speaks OpenClaw's protocol: one socket per node, no §12 link.
    package var openClaw = false
    package struct Call {
        package var connection: ConnectionID
        /// The node's own ID for the call, which its answer carries.
        package var callID: String
        package var method: String
        package var deadline: Moment
    }
    package var calls: [String: Call] = [:]
    package var nextCall = 0

    func isCurrent(_ generation: Int) -> Bool { up && generation == self.generation }
    package var nextDeadline: Moment? { calls.values.map(\.deadline).min() }

    mutating func linkUp(_ generation: Int) { (self.generation, up) = (generation, true) }
    mutating func linkDown() { up = false }
}

/// The gateway's view of the bridge (PROTOCOL.md §12): events it hears and calls nodes make to it.
extension BridgeCore {
    package static let callTimeout: TimeInterval = 30

    package enum NodeEventKind: String {
        case connected, disconnected, foreground, background, revoked
        case pairRequested = "pair.requested"
        case pairResolved = "pair.resolved"
        /// An event the node itself sent.
        case nodeEvent = "event"
    }

    // MARK: - The link

    /// The link of this generation is up, and `bridge.hello` has gone out on it first.
    mutating func gatewayUp(_ generation: Int) {
        gateway.linkUp(generation)
    }

    /// The link dropped: the gateway's invokes in flight and nodes' calls waiting for it fail now
    /// instead of hanging. Nodes stay connected.
    mutating func gatewayDown(_ generation: Int) {
        guard gateway.isCurrent(generation) else { return }
        gateway.linkDown()
        // Nobody is left to answer: what the link's gateway held is dropped, not run later.
        book.gatewayLost(generation, now: now)
        let error = ErrorMessage(code: ErrorMessage.unavailable, message: "the gateway link dropped", retryable: true)
        for (_, call) in gateway.calls.sorted(by: { $0.key < $1.key }) where connections[call.connection] != nil {
            send(GatewayCallResult(id: call.callID, result: .failure(error)), to: call.connection)
        }
        gateway.calls.removeAll()
    }

    /// The driver could not send events while the link was backed up; it reports how many once it
    /// drains, and the gateway hears the count.
    mutating func gatewayDrained(_ generation: Int, droppedEvents: Int) {
        guard gateway.isCurrent(generation), droppedEvents > 0 else { return }
        logger.warning("the gateway was not reading: \(droppedEvents) events were not sent")
        actions.append(.toGateway(generation: generation, .event(name: GatewayMethod.droppedEvent, payload: ["events": .number(Double(droppedEvents))])))
    }

    /// The gateway answered a call a node made.
    mutating func gatewayAnswered(_ id: String, _ result: Result<JSONValue?, ErrorMessage>, generation: Int) {
        guard gateway.isCurrent(generation) else {
            logger.notice("the gateway answered an unknown call", metadata: ["id": "\(id)"])
            return
        }
        callAnswered(id, result)
    }

    /// The OpenClaw gateway replied to a node's `node.event` made from its call.
    mutating func openClawEventAnswered(_ id: String, _ result: Result<JSONValue?, ErrorMessage>) {
        callAnswered(id, result)
    }

    private mutating func callAnswered(_ id: String, _ result: Result<JSONValue?, ErrorMessage>) {
        guard let call = gateway.calls.removeValue(forKey: id) else {
            logger.notice("the gateway answered an unknown call", metadata: ["id": "\(id)"])
            return
        }
        if connections[call.connection] != nil { send(GatewayCallResult(id: call.callID, result: result), to: call.connection) }
    }

    mutating func expireCalls(now: Moment) {
        for (id, call) in gateway.calls.sorted(by: { $0.key < $1.key }) where call.deadline <= now {
            gateway.calls[id] = nil
            guard connections[call.connection] != nil else { continue }
            send(
                GatewayCallResult(
                    id: call.callID,
                    result: .failure(
                        ErrorMessage(
                            code: ErrorMessage.timeout, message: "the gateway did not answer \(call.method) in time", retryable: true))), to: call.connection)
        }
    }

    // MARK: - Events (bridge → gateway)

    mutating func emit(_ kind: NodeEventKind, node: Fingerprint, _ extra: [String: JSONValue] = [:]) {
        if gateway.openClaw { return announcePresence(kind, node: node) }
        guard gateway.up else { return }
        var payload: [String: JSONValue] = ["type": .string(kind.rawValue), "nodeId": .string(node.description)]
        if let name = paired[node]?.details.displayName { payload["displayName"] = .string(name) }
        payload.merge(extra) { $1 }
        actions.append(.toGateway(generation: gateway.generation, .event(name: GatewayMethod.nodeEvent, payload: .object(payload))))
    }

    /// Pairing events, derived from what changed in the store, whoever changed it (the bridge or the CLI).
    mutating func announceChanges(from before: PairingState, to after: PairingState) {
        let oldRequests = Set(before.pending.requests.map(\.requestId))
        for request in after.pending.requests where !oldRequests.contains(request.requestId) {
            emit(
                .pairRequested, node: request.nodeId,
                [
                    "requestId": .string(request.requestId), "displayName": .string(request.details.displayName),
                    "platform": .string(request.details.platform),
                ])
        }
        let pairedKeys = Set(after.paired.nodes.map(\.publicKey))
        let newRequests = Set(after.pending.requests.map(\.requestId))
        let expired = Set(after.pending.expired.map(\.requestId))
        for request in before.pending.requests where !newRequests.contains(request.requestId) {
            let outcome = pairedKeys.contains(request.publicKey) ? "approved" : expired.contains(request.requestId) ? "expired" : "rejected"
            emit(.pairResolved, node: request.nodeId, ["requestId": .string(request.requestId), "outcome": .string(outcome)])
        }
        let oldKeys = Set(before.paired.nodes.map(\.publicKey))
        for node in after.paired.nodes where !oldKeys.contains(node.publicKey) && node.pairingMethod == .invite {
            emit(.pairResolved, node: node.nodeId, ["outcome": "approved", "method": "invite"])
        }
        for node in before.paired.nodes where !pairedKeys.contains(node.publicKey) {
            emit(.revoked, node: node.nodeId, ["displayName": .string(node.details.displayName)])
        }
    }

    // MARK: - Calls (node → gateway)

    /// A paired node calls the gateway. Only `agent` (with an idempotency key) and `system-event`
    /// get through, within their rate limits; anything else is refused here and never reaches it.
    mutating func nodeCalled(_ call: GatewayCall, on connection: Connection, now: Moment) {
        let details: JSONValue = ["nodeId": .string(connection.nodeId.description), "method": .string(call.method)]
        func refuse(_ error: ErrorMessage) { send(GatewayCallResult(id: call.id, result: .failure(error)), to: connection.id) }
        guard GatewayMethod.nodeCallable.contains(call.method) else {
            logger.notice("node called a forbidden gateway method", metadata: meta(connection, ["method": "\(call.method)"]))
            return refuse(ErrorMessage(code: ErrorMessage.forbidden, message: "nodes may call only agent and system-event", details: details, retryable: false))
        }
        let params: [String: JSONValue]
        switch call.params {
        case nil, .null?: params = [:]
        case let .object(fields)?: params = fields
        default: return refuse(ErrorMessage(code: ErrorMessage.invalidRequest, message: "params must be an object", details: details))
        }
        let isAgent = call.method == GatewayMethod.agent
        guard !isAgent || !(call.idempotencyKey ?? "").isEmpty else {
            return refuse(ErrorMessage(code: ErrorMessage.invalidRequest, message: "agent needs an idempotencyKey", details: details))
        }
        if case let .limited(retryAfterMs) = buckets.take(isAgent ? .agent : .systemEvent, node: connection.nodeId, limits: settings.limits, now: now) {
            let perMinute = isAgent ? settings.limits[.agentPerMinute] : settings.limits[.systemEventsPerMinute]
            return refuse(
                ErrorMessage(
                    code: ErrorMessage.rateLimited, message: "at most \(perMinute) \(call.method) calls a minute",
                    details: details, retryable: true, retryAfterMs: retryAfterMs))
        }
        guard gateway.configured else {
            return refuse(ErrorMessage(code: ErrorMessage.unavailable, message: "no gateway is configured", details: details, retryable: true))
        }
        if gateway.openClaw {
            // On the node's own socket, as the node.event OpenClaw's agent path acts on.
            let (event, payload) =
                isAgent
                ? OpenClawNodeEvents.agent(params, idempotencyKey: call.idempotencyKey ?? "")
                : OpenClawNodeEvents.systemEvent(params)
            let id = awaitCall(call, from: connection, now: now)
            actions.append(.openClawEvent(node: connection.nodeId, event: event, payload: payload, tag: id))
            return
        }
        guard gateway.up else {
            return refuse(ErrorMessage(code: ErrorMessage.unavailable, message: "the gateway is not connected", details: details, retryable: true))
        }
        // The bridge, not the node, says who is calling.
        var forwarded = params
        forwarded["nodeId"] = .string(connection.nodeId.description)
        if let key = call.idempotencyKey { forwarded["idempotencyKey"] = .string(key) }
        let id = awaitCall(call, from: connection, now: now)
        actions.append(.toGateway(generation: gateway.generation, .request(id: id, method: call.method, params: .object(forwarded))))
    }

    /// Books a node's call for the gateway's answer (or its timeout); returns the bridge's ID for it.
    private mutating func awaitCall(_ call: GatewayCall, from connection: Connection, now: Moment) -> String {
        gateway.nextCall += 1
        let id = "b\(gateway.nextCall)"
        let deadline = now.addingTimeInterval(Self.callTimeout)
        gateway.calls[id] = GatewayLinkState.Call(connection: connection.id, callID: call.id, method: call.method, deadline: deadline)
        arm(deadline)
        return id
    }
}
