#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One lanbridge node's WebSocket session at an OpenClaw gateway, as role `node`
/// (openclaw-gateway-protocol.md §2, §4), sans I/O: frames and the node's answers go in, actions
/// come out. The bridge holds one per connected, paired node; `OpenClawLink` carries the actions out.
///
///     gateway → connect.challenge {nonce, ts}
///     session → req connect {minProtocol 3, maxProtocol 4, client node-host/node, role node,
///               scopes [], device {id, publicKey, signature over v3 (or v2), signedAt = ts, nonce}, auth}
///     gateway → res hello-ok {protocol, auth.deviceToken, policy.tickIntervalMs}
///     gateway → event node.invoke.request {id, nodeId, command, paramsJSON, timeoutMs, idempotencyKey}
///     session → req node.invoke.result {id, nodeId, ok, payloadJSON | error}
///
/// Nothing about the node is sent before the gateway's challenge, and nothing it sends is acted
/// on before `hello-ok`.
public struct OpenClawNodeSession: Sendable {
    /// OpenClaw's capabilities last 10 minutes from their last use (canvas-capability.ts); the
    /// session asks for a fresh one well before, so a page opened after a quiet spell still loads.
    public static let canvasRefreshMs: Int64 = 4 * 60_000

    private enum State: Sendable {
        case awaitingChallenge(since: Int64)
        case awaitingHello(requestId: String, since: Int64)
        case ready
        case closed
    }

    public private(set) var configuration: Configuration
    private var state: State
    public private(set) var protocolVersion = 0
    private var tickIntervalMs: Int64 = 30_000
    private var lastFrameMs: Int64
    private var inFlight: Set<String> = []
    /// Queued actions pulled and being run; acknowledged once all have answered.
    private var queuedRunning: Set<String> = []
    private var queuedDone: [String] = []
    private var nextRequest = 0
    /// When the canvas capability was last given, if the gateway has a canvas host.
    private var canvasSinceMs: Int64?
    /// `node.event` requests waiting for the gateway's reply, by request ID: the caller's tags.
    private var eventsWaiting: [String: String] = [:]
    /// A gateway that never answers cannot grow `eventsWaiting` past this (issue 41): later calls
    /// are answered UNAVAILABLE until replies come.
    public static let maxEventsWaiting = 256

    public init(_ configuration: Configuration, nowMs: Int64) {
        self.configuration = configuration
        state = .awaitingChallenge(since: nowMs)
        lastFrameMs = nowMs
    }

    public var isReady: Bool { if case .ready = state { true } else { false } }

    /// Nothing is in flight on the socket: closing it now loses no invoke and no event's reply.
    public var isIdle: Bool { inFlight.isEmpty && queuedRunning.isEmpty && eventsWaiting.isEmpty }

    // MARK: - Events

    /// A text frame from the gateway.
    public mutating func received(_ bytes: [UInt8], nowMs: Int64) -> [Action] {
        lastFrameMs = nowMs
        let frame: GatewayFrame
        do { frame = try GatewayFrame.decode(bytes) } catch {
            return close("the gateway sent an unreadable frame: \(error)", .backoff)
        }
        switch (state, frame) {
        case let (.awaitingChallenge, .event(name, payload)) where name == "connect.challenge":
            return connect(challenge: payload, nowMs: nowMs)
        case (.awaitingChallenge, _):
            return []  // nothing but the challenge counts before it
        case let (.awaitingHello(requestId, _), .response(id, result)) where id == requestId:
            return hello(result)
        case (.awaitingHello, _):
            return []
        case let (.ready, .event(name, payload)):
            return event(name, payload)
        case let (.ready, .response(id, result)):
            return response(id, result)
        case (.ready, .request), (.closed, _):
            return []  // the gateway sends nodes no requests
        }
    }

    /// The node (or lanbridge's gate, for it) answered an invoke.
    public mutating func nodeAnswered(invokeId: String, _ answer: Result<InvokePayload, ErrorMessage>) -> [Action] {
        guard isReady else { return [] }
        if queuedRunning.remove(invokeId) != nil {
            // Back in the background already: leave it queued for the next pull.
            if case let .failure(error) = answer, error.code == ErrorMessage.backgroundUnavailable {} else { queuedDone.append(invokeId) }
            guard queuedRunning.isEmpty, !queuedDone.isEmpty else { return [] }
            defer { queuedDone = [] }
            return [request("node.pending.ack", ["ids": .array(queuedDone.map(JSONValue.string))], id: "ack")]
        }
        guard inFlight.remove(invokeId) != nil else { return [] }  // cancelled, or answered already
        var params: [String: JSONValue] = ["id": .string(invokeId), "nodeId": .string(configuration.device.deviceId)]
        switch answer {
        case let .success(payload):
            params["ok"] = true
            // The node's JSON text, validated by the bridge, as the gateway's payloadJSON string; a
            // void command's answer has none, as OpenClaw's apps send it (GatewayNodeSession.swift:489-490).
            if payload != .value(nil) { params["payloadJSON"] = .string(String(decoding: payload.bytes, as: UTF8.self)) }
        case let .failure(error):
            params["ok"] = false
            // OpenClaw's error has a code and a message only: the reason (ASKED_DENIED, ASK_TIMEOUT,
            // NOT_ALLOWLISTED, …) leads the message, so the agent can tell one refusal from another.
            let reason = error.details?["reason"]?.stringValue.flatMap { $0 == error.code ? nil : $0 }
            params["error"] = ["code": .string(error.code), "message": .string(reason.map { "\($0): \(error.message)" } ?? error.message)]
        }
        return [request("node.invoke.result", .object(params))]
    }

    /// Something the node says to the agent (`OpenClawNodeEvents`), as `node.event {event,
    /// payloadJSON}`. With a `tag`, the gateway's reply comes back as `eventAnswered`.
    public mutating func nodeEvent(_ event: String, payload: JSONValue, tag: String?) -> [Action] {
        guard isReady else {
            return tag.map {
                [
                    .eventAnswered(
                        tag: $0,
                        .failure(
                            ErrorMessage(
                                code: ErrorMessage.unavailable, message: "the node's gateway session is not up",
                                retryable: true)))
                ]
            } ?? []
        }
        if let tag, eventsWaiting.count >= Self.maxEventsWaiting {
            return [
                .eventAnswered(
                    tag: tag,
                    .failure(
                        ErrorMessage(
                            code: ErrorMessage.unavailable, message: "\(Self.maxEventsWaiting) calls already wait for the gateway's reply",
                            retryable: true)))
            ]
        }
        let (id, action) = identifiedRequest(
            "node.event", ["event": .string(event), "payloadJSON": .string(String(decoding: payload.serialized, as: UTF8.self))],
            id: "event")
        if let tag { eventsWaiting[id] = tag }
        return [action]
    }

    /// A fresh canvas capability, now (issue 48 §5): the node refreshed its own, or the canvas
    /// host refused the one held (its clock passed it, as after a suspend the 4-minute timer
    /// sleeps through). The answer comes as `.canvasCapability`. Nothing without a canvas host.
    public mutating func refreshCanvas(nowMs: Int64) -> [Action] {
        guard isReady, canvasSinceMs != nil else { return [] }
        canvasSinceMs = nowMs
        return [request("node.canvas.capability.refresh", [:], id: "canvas")]
    }

    /// The node came to the foreground: fetch what the gateway queued for it meanwhile.
    public mutating func nodeForeground(_ foreground: Bool) -> [Action] {
        guard isReady, foreground, queuedRunning.isEmpty else { return [] }
        return [request("node.pending.pull", [:], id: "pull")]
    }

    /// Time passed: a handshake that takes too long, or a gateway silent for two ticks, ends the session.
    public mutating func timer(nowMs: Int64) -> [Action] {
        switch state {
        case let .awaitingChallenge(since), let .awaitingHello(_, since):
            if nowMs - since > Configuration.handshakeTimeoutMs { return close("the gateway did not complete the handshake in time", .backoff) }
        case .ready:
            if nowMs - lastFrameMs > 2 * tickIntervalMs { return close("the gateway was silent for two tick intervals", .backoff) }
            if let since = canvasSinceMs, nowMs - since >= Self.canvasRefreshMs {
                canvasSinceMs = nowMs  // one request per interval, answered or not
                return [request("node.canvas.capability.refresh", [:], id: "canvas")]
            }
        case .closed:
            break
        }
        return []
    }

    /// When `timer` should next be called.
    public var nextDeadlineMs: Int64? {
        switch state {
        case let .awaitingChallenge(since), let .awaitingHello(_, since): since + Configuration.handshakeTimeoutMs + 1
        case .ready: min(lastFrameMs + 2 * tickIntervalMs + 1, canvasSinceMs.map { $0 + Self.canvasRefreshMs } ?? .max)
        case .closed: nil
        }
    }

    // MARK: - Handshake

    private mutating func connect(challenge payload: JSONValue?, nowMs: Int64) -> [Action] {
        guard case let .string(nonce)? = payload?["nonce"], !nonce.isEmpty,
            case let .number(ts)? = payload?["ts"], ts >= 0, ts == ts.rounded(), ts < 9e15
        else {
            return close("the gateway's challenge had no nonce or no valid ts", .backoff)
        }
        let c = configuration
        // The signed token is what `auth.token ?? auth.deviceToken` resolves to: send one of them.
        var auth: [String: JSONValue] = [:]
        let signedToken: String
        if let deviceToken = c.deviceToken {
            (auth["deviceToken"], signedToken) = (.string(deviceToken), deviceToken)
        } else if let shared = c.sharedToken {
            (auth["token"], signedToken) = (.string(shared), shared)
        } else {
            signedToken = ""
        }
        var client: [String: JSONValue] = [
            "id": .string(c.claims.clientId), "mode": .string(c.claims.clientMode), "displayName": .string(c.displayName),
            "version": .string(c.version), "platform": .string(c.claims.platform), "instanceId": .string(c.instanceId),
        ]
        // v2 does not bind the family, and the Rust node-host leaves it out there too.
        if c.signature == .v3, let family = c.claims.deviceFamily, !family.isEmpty { client["deviceFamily"] = .string(family) }
        if let model = c.modelIdentifier, !model.isEmpty { client["modelIdentifier"] = .string(model) }
        let params: JSONValue = [
            "minProtocol": .number(Double(Configuration.protocols.lowerBound)),
            "maxProtocol": .number(Double(Configuration.protocols.upperBound)),
            "client": .object(client),
            "role": .string(c.claims.role), "scopes": .array(c.claims.scopes.map(JSONValue.string)),
            "caps": .array(c.caps.map(JSONValue.string)), "commands": .array(c.commands.map(JSONValue.string)),
            "permissions": .object([:]),
            "device": c.device.proof(c.signature, claims: c.claims, signedAtMs: Int64(ts), token: signedToken, nonce: nonce),
            "auth": .object(auth),
        ]
        let id = "connect"
        state = .awaitingHello(requestId: id, since: nowMs)
        return [.send(GatewayFrame.request(id: id, method: "connect", params: params).encoded())]
    }

    private mutating func hello(_ result: Result<JSONValue?, ErrorMessage>) -> [Action] {
        switch result {
        case let .success(payload):
            guard payload?["type"] == "hello-ok", case let .number(version)? = payload?["protocol"],
                Configuration.protocols.contains(Int(version)), version == version.rounded()
            else {
                return close("the gateway's hello-ok is not for protocol 3 or 4", .operatorNeeded("an OpenClaw gateway of protocol 3 or 4"))
            }
            protocolVersion = Int(version)
            if case let .number(tick)? = payload?["policy"]?["tickIntervalMs"], tick >= 1000, tick <= 600_000 { tickIntervalMs = Int64(tick) }
            state = .ready
            var actions: [Action] = []
            if case let .string(url)? = payload?["canvasHostUrl"], let capability = Self.canvasCapability(inHostURL: url) {
                canvasSinceMs = lastFrameMs
                actions.append(.canvasCapability(capability))
            }
            if case let .string(token)? = payload?["auth"]?["deviceToken"], !token.isEmpty, token != configuration.deviceToken {
                configuration.deviceToken = token
                actions.append(.storeDeviceToken(token))
            }
            actions.append(.connected(protocolVersion: protocolVersion))
            return actions
        case let .failure(error):
            return close("the gateway refused the connect: \(error.code): \(error.message)", Self.retry(after: error, configuration))
        }
    }

    /// What a refused shared token needs.
    public static let sharedTokenHint = "set the gateway's token in lanbridge's gateway.tokenFile"

    /// What to change before the next attempt, from the refusal's `details.code` (§2.5).
    static func retry(after error: ErrorMessage, _ configuration: Configuration) -> Retry {
        guard case let .string(code)? = error.details?["code"] else { return .backoff }
        let deviceTokenHelps =
            error.details?["canRetryWithDeviceToken"] == true || error.details?["recommendedNextStep"] == "retry_with_device_token"
        switch code {
        case "DEVICE_AUTH_SIGNATURE_INVALID" where configuration.signature == .v3: return .signV2
        case "AUTH_DEVICE_TOKEN_MISMATCH" where configuration.sharedToken != nil: return .sharedToken
        case "AUTH_TOKEN_MISMATCH" where deviceTokenHelps && configuration.deviceToken == nil: return .deviceToken
        case "PAIRING_REQUIRED":
            return .deviceApproval(requestId: { if case let .string(id)? = error.details?["requestId"], !id.isEmpty { id } else { nil } }())
        case "AUTH_TOKEN_MISSING", "AUTH_TOKEN_MISMATCH", "AUTH_DEVICE_TOKEN_MISMATCH":
            return .operatorNeeded(sharedTokenHint)
        case "PROTOCOL_MISMATCH":
            return .operatorNeeded("an OpenClaw gateway of protocol 3 or 4")
        default: return .backoff
        }
    }

    // MARK: - Ready

    private mutating func event(_ name: String, _ payload: JSONValue?) -> [Action] {
        switch name {
        case "node.invoke.request":
            return invokeRequested(payload)
        case "node.invoke.cancel":
            guard case let .string(id)? = payload?["invokeId"], inFlight.remove(id) != nil else { return [] }
            return [.cancel(invokeId: id)]
        default:
            return []  // tick, health, presence, voicewake.changed…: seen (lastFrameMs), nothing to do
        }
    }

    private mutating func invokeRequested(_ payload: JSONValue?) -> [Action] {
        guard case let .string(id)? = payload?["id"], !id.isEmpty, !inFlight.contains(id) else { return [] }
        inFlight.insert(id)
        do throws(ErrorMessage) {
            guard payload?["nodeId"] == .string(configuration.device.deviceId) else {
                throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "this socket is node \(configuration.device.deviceId)")
            }
            guard case let .string(command)? = payload?["command"], let lanbridge = OpenClawCommands.lanbridgeName(command) else {
                throw ErrorMessage(code: "UNKNOWN_COMMAND", message: "lanbridge has no such command")
            }
            let invoke = Invoke(
                id: id, command: lanbridge, params: try Self.params(payload?["paramsJSON"]),
                timeoutMs: try Self.timeout(payload?["timeoutMs"]),
                idempotencyKey: { if case let .string(key)? = payload?["idempotencyKey"], !key.isEmpty { key } else { nil } }(),
                queued: false)
            return [.invoke(invoke)]
        } catch {
            return nodeAnswered(invokeId: id, .failure(error))
        }
    }

    /// `paramsJSON`: a string of JSON (an object), null, or absent. Read by the one strict reader.
    static func params(_ value: JSONValue?) throws(ErrorMessage) -> JSONValue? {
        switch value {
        case nil, .null?: return nil
        case let .string(text)?:
            let bytes = Array(text.utf8)
            guard (try? JSONScanner.members([], in: bytes)) != nil, case .object = JSONValue(validated: bytes) else {
                throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "paramsJSON is not a JSON object")
            }
            return JSONValue(validated: bytes)
        default:
            throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "paramsJSON must be a string")
        }
    }

    /// `timeoutMs`: absent, or 0 for "no bound" (lanbridge's default applies), else 1…2³¹−1.
    static func timeout(_ value: JSONValue?) throws(ErrorMessage) -> Int? {
        switch value {
        case nil, .null?: return nil
        case let .number(ms)? where ms == 0: return nil
        case let .number(ms)? where ms >= 1 && ms <= Double(Int32.max) && ms == ms.rounded(): return Int(ms)
        default: throw ErrorMessage(code: ErrorMessage.invalidRequest, message: "timeoutMs must be a whole number of milliseconds")
        }
    }

    private mutating func response(_ id: String, _ result: Result<JSONValue?, ErrorMessage>) -> [Action] {
        if let tag = eventsWaiting.removeValue(forKey: id) { return [.eventAnswered(tag: tag, result)] }
        if id.hasPrefix("canvas") {
            guard case let .success(payload) = result, case let .string(capability)? = payload?["canvasCapability"],
                Self.isCapability(capability)
            else { return [] }
            return [.canvasCapability(capability)]
        }
        if id.hasPrefix("ack") {
            guard case let .success(payload) = result, case let .array(acked)? = payload?["ackedIds"],
                case let .number(remaining)? = payload?["remainingCount"], remaining >= 0, remaining <= 1e6
            else { return [] }
            return [.queueAcknowledged(count: acked.count, remaining: Int(remaining))]
        }
        guard id.hasPrefix("pull"), case let .success(payload) = result, case let .array(actions)? = payload?["actions"] else { return [] }
        var out: [Action] = []
        for action in actions {
            guard case let .string(actionId)? = action["id"], !actionId.isEmpty, !queuedRunning.contains(actionId) else { continue }
            queuedRunning.insert(actionId)
            // (`try?` would flatten "no params" into "bad params".)
            guard case let .string(command)? = action["command"], let lanbridge = OpenClawCommands.lanbridgeName(command),
                case let .success(params) = Result(catching: { () throws(ErrorMessage) in try Self.params(action["paramsJSON"]) })
            else {
                out += nodeAnswered(invokeId: actionId, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "unusable queued action")))
                continue
            }
            out.append(.invoke(Invoke(id: actionId, command: lanbridge, params: params, timeoutMs: nil, idempotencyKey: "queued-\(actionId)", queued: true)))
        }
        return out
    }

    // MARK: - Plumbing

    private mutating func request(_ method: String, _ params: JSONValue, id: String? = nil) -> Action {
        identifiedRequest(method, params, id: id ?? "r").action
    }

    /// A request, and the ID its response will carry.
    private mutating func identifiedRequest(_ method: String, _ params: JSONValue, id: String) -> (id: String, action: Action) {
        nextRequest += 1
        let requestID = "\(id)\(nextRequest)"
        return (requestID, .send(GatewayFrame.request(id: requestID, method: method, params: params).encoded()))
    }

    private mutating func close(_ reason: String, _ retry: Retry) -> [Action] {
        state = .closed
        // Nobody will answer what waits: say so now rather than at the caller's timeout.
        let unanswered = eventsWaiting.sorted { $0.key < $1.key }.map {
            Action.eventAnswered(
                tag: $0.value,
                .failure(
                    ErrorMessage(
                        code: ErrorMessage.unavailable, message: "the node's gateway session ended", retryable: true)))
        }
        eventsWaiting = [:]
        return unanswered + [.close(reason: reason, retry: retry)]
    }
}
