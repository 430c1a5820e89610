import Foundation
import LanbridgeProtocol
import LanbridgeState

/// The gateway's view of the bridge (PROTOCOL.md §12): the requests it may make, the events it
/// hears, and the two calls a node may make toward it. The control socket speaks the same requests.
extension Bridge {
    /// Answers one request frame from the gateway or the control socket.
    func respond(method: String, params: JSONValue?, origin: InvokeRouter.Origin) async -> Answer {
        func string(_ key: String, required: Bool = true) throws(ErrorMessage) -> String? {
            switch params?[key] {
            case let .string(value)? where !value.isEmpty: return value
            case nil where !required, .null? where !required: return nil
            default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "\(method) needs a non-empty string \"\(key)\"")
            }
        }
        do throws(ErrorMessage) {
            switch method {
            case GatewayMethod.nodeList:
                await refreshIfChanged()
                return .success(.value(.object(["nodes": .array(lastState.paired.nodes.map { JSONValue(encoding: describing(node: $0)) })])))
            case GatewayMethod.nodeDescribe:
                await refreshIfChanged()
                let reference = try string("nodeId")!
                do { return .success(.value(JSONValue(encoding: describing(node: try lookUp(reference))))) } catch {
                    throw ErrorMessage(code: ErrorMessage.nodeNotFound, message: "\(error)", details: ["nodeId": .string(reference)])
                }
            case GatewayMethod.nodeInvoke:
                let timeout: Int?
                switch params?["timeoutMs"] {
                case nil, .null?: timeout = nil
                case let .number(n)? where n >= 1 && n <= Double(Int32.max): timeout = Int(n)
                default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "timeoutMs must be a positive number of milliseconds")
                }
                if case let p? = params?["params"], case .object = p {} else if params?["params"] != nil && params?["params"] != .null {
                    throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "params must be an object")
                }
                return await invoke(InvokeRequest(node: try string("nodeId")!, command: try string("command")!, params: params?["params"],
                                                  timeoutMs: timeout, idempotencyKey: try string("idempotencyKey")), origin: origin)
            default:
                throw ErrorMessage(code: ErrorMessage.unknownMethod, message: "unknown method \"\(method)\" (node.list, node.describe, node.invoke)")
            }
        } catch {
            return .failure(error)
        }
    }

    func describing(node: PairedNode) -> NodeDescription {
        NodeDescription(node, live: runtime.nodes[node.nodeId.description], policy: settings.policy)
    }

    // MARK: - Events (bridge → gateway)

    enum NodeEventKind: String {
        case connected, disconnected, foreground, background, revoked
        case pairRequested = "pair.requested"
        case pairResolved = "pair.resolved"
        /// An event the node itself sent.
        case nodeEvent = "event"
    }

    func emit(_ kind: NodeEventKind, node: Fingerprint, _ extra: [String: JSONValue] = [:]) {
        guard let uplink else { return }
        var payload: [String: JSONValue] = ["type": .string(kind.rawValue), "nodeId": .string(node.description)]
        if let name = paired[node]?.details.displayName { payload["displayName"] = .string(name) }
        payload.merge(extra) { $1 }
        uplink.post(.event(name: GatewayMethod.nodeEvent, payload: .object(payload)))
    }

    /// Pairing events, derived from what changed in the store, whoever changed it (the bridge or the CLI).
    func announceChanges(from before: PairingState, to after: PairingState) {
        let oldRequests = Set(before.pending.requests.map(\.requestId))
        for request in after.pending.requests where !oldRequests.contains(request.requestId) {
            emit(.pairRequested, node: request.nodeId, ["requestId": .string(request.requestId), "displayName": .string(request.details.displayName),
                                                        "platform": .string(request.details.platform)])
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
    func nodeCalled(_ call: GatewayCall, on connection: Connection) {
        let (callID, connectionID) = (call.id, connection.id)
        let reply = { (result: Result<JSONValue?, ErrorMessage>) -> Void in
            Task { await self.answerCall(callID, result, on: connectionID) }
        }
        let details: JSONValue = ["nodeId": .string(connection.nodeId.description), "method": .string(call.method)]
        guard GatewayMethod.nodeCallable.contains(call.method) else {
            logger.notice("node called a forbidden gateway method", metadata: meta(connection, ["method": "\(call.method)"]))
            return reply(.failure(ErrorMessage(code: ErrorMessage.forbidden, message: "nodes may call only agent and system-event",
                                               details: details, retryable: false)))
        }
        let params: [String: JSONValue]
        switch call.params {
        case nil, .null?: params = [:]
        case let .object(fields)?: params = fields
        default: return reply(.failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "params must be an object", details: details)))
        }
        let isAgent = call.method == GatewayMethod.agent
        guard !isAgent || !(call.idempotencyKey ?? "").isEmpty else {
            return reply(.failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "agent needs an idempotencyKey", details: details)))
        }
        if case let .limited(retryAfterMs) = take(isAgent ? .agent : .systemEvent, node: connection.nodeId) {
            let perMinute = isAgent ? settings.limits.agentPerMinute : settings.limits.systemEventsPerMinute
            return reply(.failure(ErrorMessage(code: ErrorMessage.rateLimited, message: "at most \(perMinute) \(call.method) calls a minute",
                                               details: details, retryable: true, retryAfterMs: retryAfterMs)))
        }
        guard let uplink else {
            return reply(.failure(ErrorMessage(code: ErrorMessage.unavailable, message: "no gateway is configured", details: details, retryable: true)))
        }
        // The bridge, not the node, says who is calling.
        var forwarded = params
        forwarded["nodeId"] = .string(connection.nodeId.description)
        if let key = call.idempotencyKey { forwarded["idempotencyKey"] = .string(key) }
        let method = call.method
        Task {
            let result = await uplink.call(method: method, params: .object(forwarded))
            await self.answerCall(callID, result, on: connectionID)
        }
    }

    private func answerCall(_ id: String, _ result: Result<JSONValue?, ErrorMessage>, on connectionID: Int) async {
        guard let connection = connections[connectionID] else { return }
        await send(GatewayCallResult(id: id, result: result), to: connection)
    }
}

extension Bridge {
    /// The gateway link dropped: its invokes in flight fail now instead of hanging.
    func gatewayLost() {
        complete(router.gatewayLost())
    }

    func setGatewayStatus(_ status: String) {
        guard runtime.gateway != status else { return }
        runtime.gateway = status
        publishRuntime()
    }
}

extension Bridge {
    func setControlSocket(_ path: String) {
        runtime.controlSocket = path
        publishRuntime()
    }
}
