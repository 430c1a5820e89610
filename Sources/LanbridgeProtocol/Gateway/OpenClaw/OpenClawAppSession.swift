import LanbridgeCrypto

/// OpenClaw's own node apps (iOS, Android, macOS) at lanbridge's second front door: the gateway
/// side of OpenClaw's protocol for role `node` (openclaw-apps-and-canvas.md §B2, §B4), sans I/O.
/// The app's session ends here; what it says becomes lanbridge session messages for the core
/// (`toBridge`), as a lanbridge node's would, and what the core says to a node becomes OpenClaw
/// frames for the app. The core decides everything (pairing, rules, fast-fail, rates).
///
///     session → event connect.challenge {nonce, ts}
///     app     → req connect {min/maxProtocol, client, role node, device {id, publicKey, signature, signedAt, nonce}, auth}
///     session → authenticated (the core looks the device up)
///     core    → welcome (paired)          → res hello-ok, then event tick every tickIntervalMs
///     core    → error NOT_PAIRED {details} → res NOT_PAIRED {details.code PAIRING_REQUIRED, requestId}, close 1008
///     core    → invoke                    → event node.invoke.request {id, nodeId, command, paramsJSON, timeoutMs, idempotencyKey}
///     app     → req node.invoke.result    → invoke.result (payloadJSON or payload) and res {ok}
///     app     → req node.event            → gateway.call (agent, voice), push.register (APNs) or event
public struct OpenClawAppSession: Sendable {
    public static let handshakeTimeoutMs: Int64 = 10_000
    public static let tickIntervalMs: Int64 = 30_000
    /// Requests of the app's (`node.event`, forwarded as calls) waiting for the core's answer.
    public static let maxWaiting = 64
    public static let clientIds: Set<String> = ["openclaw-ios", "openclaw-android", "openclaw-macos", "node-host"]

    private enum State: Sendable {
        case awaitingConnect(since: Int64)
        case authenticating(requestId: String, since: Int64)
        case ready
        case closed
    }

    private var state: State
    private let nonce: String
    public private(set) var device: Device?
    private var binary = false
    private var lastTickMs: Int64 = 0
    /// The app's request IDs waiting for the core, by the call ID they went out under.
    private var waiting: [String: String] = [:]
    private var nextCall = 0
    /// Frames the app sent that this session does not know: counted, refused, logged once.
    public private(set) var unknown = 0

    public init(nonce: String, nowMs: Int64) {
        self.nonce = nonce
        state = .awaitingConnect(since: nowMs)
    }

    public var isReady: Bool { if case .ready = state { true } else { false } }

    /// On the upgrade: the challenge, within the 2 s Android waits for it.
    public func start(nowMs: Int64) -> [Action] {
        [.send(GatewayFrame.event(name: "connect.challenge", payload: ["nonce": .string(nonce), "ts": .number(Double(nowMs))]).encoded(), binary: false)]
    }

    // MARK: - From the app

    public mutating func received(_ bytes: [UInt8], binary: Bool, nowMs: Int64) -> [Action] {
        self.binary = binary
        let frame: GatewayFrame
        do { frame = try GatewayFrame.decode(bytes) } catch {
            return close(1008, "invalid frame")
        }
        switch (state, frame) {
        case let (.awaitingConnect, .request(id, "connect", params)):
            switch Self.verifyConnect(params, nonce: nonce, nowMs: nowMs) {
            case let .success(device):
                self.device = device
                state = .authenticating(requestId: id, since: nowMs)
                return [.authenticated(device)]
            case let .failure(refusal):
                return [respond(id, .failure(refusal.error))] + close(1008, refusal.error.message)
            }
        case let (.awaitingConnect, .request(id, _, _)):
            return [respond(id, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "invalid handshake: first request must be connect")))]
                + close(1008, "invalid handshake")
        case (.awaitingConnect, _), (.authenticating, _):
            return close(1008, "invalid handshake")
        case let (.ready, .request(id, method, params)):
            return request(id, method, params)
        case (.ready, _), (.closed, _):
            return []  // apps send requests only; a response or event from them is dropped
        }
    }

    private mutating func request(_ id: String, _ method: String, _ params: JSONValue?) -> [Action] {
        switch method {
        case "node.invoke.result":
            guard case let .string(invokeId)? = params?["id"], !invokeId.isEmpty else {
                return [respond(id, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "node.invoke.result needs an id")))]
            }
            let result: InvokeResult
            if params?["ok"] == true {
                let payload: JSONValue?
                switch (params?["payloadJSON"], params?["payload"]) {
                case let (.string(text)?, _):
                    // The one reader decides the node's JSON; a payload that does not read is refused here too.
                    guard let value = JSONValue(strict: Array(text.utf8)) else {
                        return [respond(id, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "payloadJSON is not JSON")))]
                    }
                    payload = value
                case let (_, value?) where value != .null: payload = value  // Android sends it parsed
                default: payload = nil  // a void command: no payload, as the gateway would hear it from the app (issue 48 §7)
                }
                result = InvokeResult(id: invokeId, ok: true, payload: payload, error: nil)
            } else {
                var code = ErrorMessage.commandFailed, message = "the app reported a failure"
                if case let .string(c)? = params?["error"]?["code"], !c.isEmpty { code = c }
                if case let .string(m)? = params?["error"]?["message"] { message = m }
                result = InvokeResult(id: invokeId, error: ErrorMessage(code: code, message: message))
            }
            return [.toBridge(SessionMessages.encode(result)), respond(id, .success(["ok": true]))]
        case "node.event":
            return event(id, params)
        case "node.pending.pull":
            // lanbridge holds nothing for an app: a command for it in the background fails fast, retryable.
            return [respond(id, .success(["nodeId": .string(device?.deviceId ?? ""), "actions": []]))]
        case "node.pending.ack", "node.pending.drain":
            return [respond(id, .success(["ok": true]))]
        case "node.canvas.capability.refresh":
            // The bridge's canvas relay, as for its own nodes (PROTOCOL.md §9.8); UNAVAILABLE without one.
            guard waiting.count < Self.maxWaiting else {
                return [respond(id, .failure(ErrorMessage(code: ErrorMessage.rateLimited, message: "too many calls wait for an answer", retryable: true)))]
            }
            nextCall += 1
            let call = "v\(nextCall)"
            waiting[call] = id
            return [.toBridge(SessionMessages.encode(CanvasRefresh(id: call)))]
        default:
            unknown += 1
            return [respond(id, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "unknown method for a node: \(SafeText.escape(String(method.prefix(64))))")))]
        }
    }

    /// `node.event`: a voice transcript or an agent request becomes the node's `agent` call (so
    /// the bridge's `agent` allowlist and rate apply); an APNs registration, a push registration;
    /// anything else an event under the bridge's event catalogue.
    private mutating func event(_ id: String, _ params: JSONValue?) -> [Action] {
        guard case let .string(name)? = params?["event"], !name.isEmpty else {
            return [respond(id, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "node.event needs an event")))]
        }
        var payload: JSONValue?
        switch params?["payloadJSON"] {
        case let .string(text)?:
            guard let value = JSONValue(strict: Array(text.utf8)) else {
                return [respond(id, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "payloadJSON is not JSON")))]
            }
            payload = value
        default:
            payload = params?["payload"]
        }
        guard waiting.count < Self.maxWaiting else {
            return [respond(id, .failure(ErrorMessage(code: ErrorMessage.rateLimited, message: "too many calls wait for an answer", retryable: true)))]
        }
        nextCall += 1
        let call = "a\(nextCall)"
        switch name {
        case "voice.transcript", "agent.request":
            var fields: [String: JSONValue] = [:]
            if case let .object(given)? = payload { fields = given }
            if name == "voice.transcript" {
                fields["message"] = fields.removeValue(forKey: "text") ?? .string("")
                fields["source"] = "voice"
            }
            var key: String?
            if case let .string(eventId)? = fields.removeValue(forKey: "eventId"), !eventId.isEmpty { key = eventId }
            waiting[call] = id
            return [.toBridge(SessionMessages.encode(GatewayCall(id: call, method: "agent", params: .object(fields), idempotencyKey: key ?? "app-\(id)")))]
        case "push.apns.register":
            guard case let .string(token)? = payload?["token"] else {
                return [respond(id, .failure(ErrorMessage(code: ErrorMessage.invalidRequest, message: "push.apns.register needs a token")))]
            }
            waiting[call] = id
            return [
                .toBridge(
                    SessionMessages.encode(
                        PushRegister(
                            id: call, provider: PushRegistration.apns, token: token,
                            environment: payload?["environment"]?.stringValue, topic: payload?["topic"]?.stringValue)))
            ]
        default:
            // The core decides whether the gateway hears it (its event catalogue, the node's grants).
            // The app hears what OpenClaw's gateway answers every well-formed node.event, handled,
            // unknown or dropped alike: {ok: true} (src/gateway/server-methods/nodes.ts:1102-1145,
            // server-node-events.ts:686-688). Anything else would tell the app what OpenClaw never does.
            return [.toBridge(SessionMessages.encode(NodeEvent(event: name, payload: payload))), respond(id, .success(["ok": true]))]
        }
    }

    // MARK: - From the core (what it says to its node)

    public mutating func fromBridge(_ message: any SessionMessage, nowMs: Int64) -> [Action] {
        switch (state, message) {
        case let (.authenticating(requestId, _), welcome as Welcome) where welcome.paired:
            state = .ready
            lastTickMs = nowMs
            return [respond(requestId, .success(helloOk(canvas: welcome.canvas)))]
        case let (.authenticating(requestId, _), error as ErrorMessage):
            return [respond(requestId, .failure(error))] + close(1008, error.code == ErrorMessage.notPaired ? "pairing required" : "refused")
        case (.authenticating, _):
            return []
        case let (.ready, invoke as Invoke):
            guard let device, let name = OpenClawCommands.openClawName(invoke.command) else { return [] }
            var payload: [String: JSONValue] = ["id": .string(invoke.id), "nodeId": .string(device.deviceId), "command": .string(name)]
            if let params = invoke.params { payload["paramsJSON"] = .string(String(decoding: params.serialized, as: UTF8.self)) }
            if let timeout = invoke.timeoutMs { payload["timeoutMs"] = .number(Double(timeout)) }
            payload["idempotencyKey"] = .string(invoke.id)  // unique per invoke: a retry at the gateway is another invoke
            return [send(.event(name: "node.invoke.request", payload: .object(payload)))]
        case let (.ready, cancel as InvokeCancel):
            return [send(.event(name: "node.invoke.cancel", payload: ["invokeId": .string(cancel.id), "nodeId": .string(device?.deviceId ?? "")]))]
        case let (_, ping as Ping):
            // The app's liveness is the socket's (WebSocket pings, ticks); the core's ping is answered here.
            return [.toBridge(SessionMessages.encode(Pong(id: ping.id)))]
        case let (.ready, result as GatewayCallResult):
            guard let id = waiting.removeValue(forKey: result.id) else { return [] }
            return [respond(id, result.ok ? .success(result.payload ?? ["ok": true]) : .failure(result.error ?? ErrorMessage(code: ErrorMessage.unavailable, message: "failed")))]
        case let (.ready, grant as CanvasGrant):
            guard let id = waiting.removeValue(forKey: grant.id) else { return [] }
            guard let canvas = grant.canvas, let capability = canvas.url.split(separator: "/").last.map(String.init) else {
                return [respond(id, .failure(grant.error ?? ErrorMessage(code: ErrorMessage.unavailable, message: "no canvas host")))]
            }
            return [
                respond(
                    id,
                    .success([
                        "canvasCapability": .string(capability), "canvasCapabilityExpiresAtMs": .number(Double(canvas.expiresAtMs)),
                        "canvasHostUrl": .string(canvas.url),
                    ]))
            ]
        case let (.ready, result as PushResult):
            guard let id = waiting.removeValue(forKey: result.id) else { return [] }
            return [respond(id, result.ok ? .success(["ok": true]) : .failure(result.error ?? ErrorMessage(code: ErrorMessage.unavailable, message: "failed")))]
        case (_, is Revoked):
            return close(1008, "revoked by the operator")
        case let (.ready, error as ErrorMessage) where error.code == ErrorMessage.replaced:
            return close(1012, "replaced by a newer session")
        default:
            return []
        }
    }

    // MARK: - Time

    public mutating func timer(nowMs: Int64) -> [Action] {
        switch state {
        case let .awaitingConnect(since), let .authenticating(_, since):
            if nowMs - since > Self.handshakeTimeoutMs { return close(1008, "handshake timeout") }
        case .ready:
            if nowMs - lastTickMs >= Self.tickIntervalMs {
                lastTickMs = nowMs
                return [send(.event(name: "tick", payload: ["ts": .number(Double(nowMs))]))]
            }
        case .closed:
            break
        }
        return []
    }

    public var nextDeadlineMs: Int64? {
        switch state {
        case let .awaitingConnect(since), let .authenticating(_, since): since + Self.handshakeTimeoutMs + 1
        case .ready: lastTickMs + Self.tickIntervalMs
        case .closed: nil
        }
    }

    // MARK: - The connect

    public struct Refusal: Error, Equatable {
        public let error: ErrorMessage
        init(_ message: String, _ detail: String) {
            error = ErrorMessage(code: ErrorMessage.invalidRequest, message: message, details: ["code": .string(detail)])
        }
    }

    /// Reads and checks `connect` whole (openclaw-apps-and-canvas.md §B4.4): protocol 3 or 4, role
    /// node, a client id of OpenClaw's apps, the device ID is SHA-256 of the key, the nonce is this
    /// session's, `signedAt` within ±2 minutes of now, and the v3 (or v2) signature verifies.
    public static func verifyConnect(_ params: JSONValue?, nonce: String, nowMs: Int64) -> Result<Device, Refusal> {
        guard case .number(let low)? = params?["minProtocol"], case .number(let high)? = params?["maxProtocol"], low <= high,
            let version = Self.protocols.reversed().first(where: { Double($0) >= low && Double($0) <= high })
        else {
            return .failure(Refusal("protocol mismatch", "PROTOCOL_MISMATCH"))
        }
        guard params?["role"] == "node" else { return .failure(Refusal("only nodes connect here; chat and talk are not relayed by lanbridge", "ROLE_NOT_ALLOWED")) }
        let client = params?["client"]
        guard case let .string(clientId)? = client?["id"], clientIds.contains(clientId), case let .string(mode)? = client?["mode"], mode == "node",
            case let .string(platform)? = client?["platform"], !platform.isEmpty, platform.utf8.count <= 64
        else {
            return .failure(Refusal("invalid connect params: client", "INVALID_CONNECT_PARAMS"))
        }
        let device = params?["device"]
        guard case let .string(deviceId)? = device?["id"], case let .string(keyText)? = device?["publicKey"],
            case let .string(signatureText)? = device?["signature"], case let .number(signedAt)? = device?["signedAt"],
            case let .string(signedNonce)? = device?["nonce"]
        else {
            return .failure(Refusal("device identity required", "DEVICE_IDENTITY_REQUIRED"))
        }
        guard let key = Base64URL.decode(keyText), key.count == Ed25519.publicKeyLength, deviceId == Hex.encode(SHA256.hash(key)) else {
            return .failure(Refusal("device identity mismatch", "DEVICE_AUTH_DEVICE_ID_MISMATCH"))
        }
        guard signedNonce == nonce else { return .failure(Refusal("device nonce mismatch", "DEVICE_AUTH_NONCE_MISMATCH")) }
        guard signedAt == signedAt.rounded(), abs(Double(nowMs) - signedAt) <= Double(skewMs) else {
            return .failure(Refusal("device signature expired", "DEVICE_AUTH_SIGNATURE_EXPIRED"))
        }
        guard let signature = Base64URL.decode(signatureText) else { return .failure(Refusal("device signature invalid", "DEVICE_AUTH_SIGNATURE_INVALID")) }
        var scopes: [String] = []
        if case let .array(items)? = params?["scopes"] { scopes = items.compactMap(\.stringValue) }
        let auth = params?["auth"]
        let token = auth?["token"]?.stringValue ?? auth?["deviceToken"]?.stringValue ?? auth?["bootstrapToken"]?.stringValue ?? ""
        let family = client?["deviceFamily"]?.stringValue
        let claims = OpenClawDevice.Claims(clientId: clientId, clientMode: mode, role: "node", scopes: scopes, platform: platform, deviceFamily: family)
        let verified = OpenClawDevice.PayloadVersion.allCases.reversed().contains { v in
            Ed25519.verify(
                signature: signature,
                of: Array(
                    OpenClawDevice.payload(
                        v, deviceId: deviceId, claims: claims, signedAtMs: Int64(signedAt),
                        token: token, nonce: nonce
                    ).utf8), publicKey: key)
        }
        guard verified else { return .failure(Refusal("device signature invalid", "DEVICE_AUTH_SIGNATURE_INVALID")) }
        var commands: [String] = []
        if case let .array(items)? = params?["commands"] {
            commands = items.compactMap(\.stringValue).compactMap(OpenClawCommands.lanbridgeName).reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
        }
        var caps: [String] = []
        if case let .array(items)? = params?["caps"] { caps = Array(items.compactMap(\.stringValue).prefix(32)) }
        let name = client?["displayName"]?.stringValue ?? ""
        return .success(
            Device(
                deviceId: deviceId, publicKey: key, clientId: clientId, platform: platform, deviceFamily: family,
                displayName: name.isEmpty ? "OpenClaw \(platformName(platform))" : name,
                modelIdentifier: client?["modelIdentifier"]?.stringValue, version: client?["version"]?.stringValue ?? "",
                commands: commands, caps: caps, protocolVersion: version,
                bootstrapToken: auth?["bootstrapToken"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }))
    }

    /// lanbridge's platform names from OpenClaw's (`iOS 18.2` → `ios`).
    static func platformName(_ platform: String) -> String {
        let lower = platform.lowercased()
        for name in ["ios", "ipados", "android", "macos", "linux"] where lower.hasPrefix(name) { return name == "ipados" ? "ios" : name }
        return "linux"
    }

    // MARK: - Plumbing

    /// `canvas`: the bridge's canvas relay for this node, as OpenClaw's `canvasHostUrl` (the same
    /// shape: `https://host:port/__openclaw__/cap/<capability>`).
    ///
    /// No `auth.deviceToken` (issue 48 §7, decided against OpenClaw's message-handler.ts:1096-1240
    /// and GatewayChannel.swift:498-560, 655-700): the apps send a stored token as `auth.token` and
    /// sign it, but lanbridge proves an app by its device key's signature over this connection's
    /// nonce and the operator's approval, every time. A bearer token would be a second credential,
    /// one a copied file or keychain could replay, for nothing the node role needs; the apps reconnect
    /// by signature alone (their own client code does, in the tests). Only their operator loop,
    /// which lanbridge does not relay, waits for a stored token.
    private func helloOk(canvas: CanvasAccess?) -> JSONValue {
        var hello: JSONValue = [
            "type": "hello-ok", "protocol": .number(Double(device?.protocolVersion ?? 3)),
            "server": ["version": "lanbridge", "connId": .string(nonce)],
            "features": ["methods": ["node.invoke.result", "node.event", "node.pending.pull", "node.pending.ack"], "events": ["tick", "node.invoke.request"]],
            "snapshot": ["presence": [], "health": [:], "stateVersion": ["presence": 0, "health": 0], "uptimeMs": 0],
            "auth": ["role": "node", "scopes": []],
            "policy": ["maxPayload": 26_214_400, "maxBufferedBytes": 52_428_800, "tickIntervalMs": .number(Double(Self.tickIntervalMs))],
        ]
        if let canvas, case var .object(fields) = hello {
            fields["canvasHostUrl"] = .string(canvas.url)
            hello = .object(fields)
        }
        return hello
    }

    private func respond(_ id: String, _ result: Result<JSONValue?, ErrorMessage>) -> Action {
        send(.response(id: id, result: result))
    }

    private func send(_ frame: GatewayFrame) -> Action { .send(frame.encoded(), binary: binary) }

    private mutating func close(_ code: UInt16, _ reason: String) -> [Action] {
        state = .closed
        return [.close(code: code, reason: reason)]
    }
}
