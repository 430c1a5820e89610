import Foundation
import LanbridgeCrypto
@testable import LanbridgeProtocol
import Testing

/// The OpenClaw node session, driven with frames and a fake clock.
struct OpenClawNodeSessionTests {
    let device = OpenClawDevice(key: .generate())

    func configuration(deviceToken: String? = nil, shared: String? = "shared-secret") -> OpenClawNodeSession.Configuration {
        .init(
            device: device, claims: .node(platform: "ios", deviceFamily: "iPhone"), displayName: "Ada's phone (lanbridge ABCD)",
            instanceId: "ABCD-EFGH", version: "0.8.0", caps: ["canvas"], commands: ["canvas.snapshot", "device.info"],
            sharedToken: shared, deviceToken: deviceToken)
    }

    static func frame(_ value: JSONValue) -> [UInt8] { value.serialized }
    static let challenge = frame(["type": "event", "event": "connect.challenge", "payload": ["nonce": "5b9c1c8e-0b7e-4c1e-9d1f-3a2b1c0d9e8f", "ts": 1_763_800_000_000]])

    /// The frame a `.send` action carries, parsed.
    static func sent(_ actions: [OpenClawNodeSession.Action]) -> [JSONValue] {
        actions.compactMap { if case let .send(bytes) = $0 { JSONValue(validated: bytes) } else { nil } }
    }

    func ready(_ configuration: OpenClawNodeSession.Configuration? = nil) -> OpenClawNodeSession {
        var session = OpenClawNodeSession(configuration ?? self.configuration(), nowMs: 0)
        _ = session.received(Self.challenge, nowMs: 1)
        _ = session.received(
            Self.frame([
                "type": "res", "id": "connect", "ok": true,
                "payload": ["type": "hello-ok", "protocol": 4, "policy": ["tickIntervalMs": 30000]],
            ]), nowMs: 2)
        return session
    }

    @Test func nothingIsSentBeforeTheChallengeAndTheConnectIsSignedOverIt() throws {
        var session = OpenClawNodeSession(configuration(), nowMs: 0)
        #expect(session.received(Self.frame(["type": "event", "event": "tick", "payload": ["ts": 1]]), nowMs: 1).isEmpty)
        let connect = try #require(Self.sent(session.received(Self.challenge, nowMs: 2)).first)
        #expect(connect["method"] == "connect")
        let params = try #require(connect["params"])
        #expect(params["minProtocol"] == 3 && params["maxProtocol"] == 4 && params["role"] == "node" && params["scopes"] == [])
        #expect(params["client"]?["id"] == "node-host" && params["client"]?["mode"] == "node" && params["client"]?["platform"] == "ios")
        #expect(params["auth"] == ["token": "shared-secret"])
        let proof = try #require(params["device"])
        #expect(proof["signedAt"] == 1_763_800_000_000, "signedAt is the challenge's ts")
        #expect(proof["nonce"] == "5b9c1c8e-0b7e-4c1e-9d1f-3a2b1c0d9e8f")
        guard case let .string(signature)? = proof["signature"] else { Issue.record("no signature"); return }
        let payload = "v3|\(device.deviceId)|node-host|node|node||1763800000000|shared-secret|5b9c1c8e-0b7e-4c1e-9d1f-3a2b1c0d9e8f|ios|iphone"
        #expect(Ed25519.verify(signature: try #require(Base64URL.decode(signature)), of: Array(payload.utf8), publicKey: device.key.publicKey))
    }

    @Test func aDeviceTokenReplacesTheSharedTokenInAuthAndInTheSignature() throws {
        var session = OpenClawNodeSession(configuration(deviceToken: "dev-token"), nowMs: 0)
        let params = try #require(Self.sent(session.received(Self.challenge, nowMs: 1)).first?["params"])
        #expect(params["auth"] == ["deviceToken": "dev-token"])
        guard case let .string(signature)? = params["device"]?["signature"] else { Issue.record("no signature"); return }
        let payload = device.payload(
            .v3, claims: configuration().claims, signedAtMs: 1_763_800_000_000, token: "dev-token",
            nonce: "5b9c1c8e-0b7e-4c1e-9d1f-3a2b1c0d9e8f")
        #expect(Ed25519.verify(signature: try #require(Base64URL.decode(signature)), of: Array(payload.utf8), publicKey: device.key.publicKey))
    }

    @Test(arguments: [JSONValue.object(["nonce": "n"]), ["nonce": "", "ts": 1], ["nonce": "n", "ts": -1], ["nonce": "n", "ts": .number(1.5)], ["ts": 1]] as [JSONValue])
    func aMalformedChallengeEndsTheSession(payload: JSONValue) {
        var session = OpenClawNodeSession(configuration(), nowMs: 0)
        let actions = session.received(Self.frame(["type": "event", "event": "connect.challenge", "payload": payload]), nowMs: 1)
        #expect(actions.count == 1 && { if case .close = actions[0] { true } else { false } }())
    }

    @Test func helloOkStoresTheIssuedDeviceTokenAndChecksTheProtocol() {
        var session = OpenClawNodeSession(configuration(), nowMs: 0)
        _ = session.received(Self.challenge, nowMs: 1)
        let actions = session.received(
            Self.frame([
                "type": "res", "id": "connect", "ok": true,
                "payload": [
                    "type": "hello-ok", "protocol": 3, "auth": ["deviceToken": "issued", "role": "node", "scopes": []],
                ],
            ]), nowMs: 2)
        #expect(actions == [.storeDeviceToken("issued"), .connected(protocolVersion: 3)])
        #expect(session.configuration.deviceToken == "issued")

        var other = OpenClawNodeSession(configuration(), nowMs: 0)
        _ = other.received(Self.challenge, nowMs: 1)
        let refused = other.received(Self.frame(["type": "res", "id": "connect", "ok": true, "payload": ["type": "hello-ok", "protocol": 5]]), nowMs: 2)
        #expect(!other.isReady && refused.count == 1)
    }

    @Test(arguments: [
        ("DEVICE_AUTH_SIGNATURE_INVALID", OpenClawNodeSession.Retry.signV2),
        ("AUTH_DEVICE_TOKEN_MISMATCH", .sharedToken),
        ("SOMETHING_NEW", .backoff),
    ])
    func refusalsSayWhatToChangeNextTime(code: String, retry: OpenClawNodeSession.Retry) {
        var session = OpenClawNodeSession(configuration(deviceToken: "old"), nowMs: 0)
        _ = session.received(Self.challenge, nowMs: 1)
        let actions = session.received(
            Self.frame([
                "type": "res", "id": "connect", "ok": false,
                "error": [
                    "code": "INVALID_REQUEST", "message": "no", "details": ["code": .string(code)],
                ],
            ]), nowMs: 2)
        guard case let .close(_, got)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(got == retry)
    }

    /// Issue 60 §2: OpenClaw's real gateway refuses a stale shared token with
    /// `AUTH_TOKEN_MISMATCH` and `canRetryWithDeviceToken: true` (and `recommendedNextStep:
    /// "retry_with_device_token"`); upstream's client then connects with its device token. A
    /// connect that carried the device token already, or a refusal that does not say so, is not retried that way.
    @Test(
        arguments: [
            (["canRetryWithDeviceToken": true, "recommendedNextStep": "retry_with_device_token"], nil, .deviceToken),
            (["recommendedNextStep": "retry_with_device_token"], nil, .deviceToken),
            (["canRetryWithDeviceToken": false, "recommendedNextStep": "update_auth_credentials"], nil, .operatorNeeded(OpenClawNodeSession.sharedTokenHint)),
            (["canRetryWithDeviceToken": "true"], nil, .operatorNeeded(OpenClawNodeSession.sharedTokenHint)),
            (["canRetryWithDeviceToken": true], "carried", .operatorNeeded(OpenClawNodeSession.sharedTokenHint)),
        ] as [(JSONValue, String?, OpenClawNodeSession.Retry)])
    func aRefusedSharedTokenIsRetriedWithTheDeviceTokenWhenTheGatewaySaysSo(advice: JSONValue, deviceToken: String?, retry: OpenClawNodeSession.Retry) {
        var session = OpenClawNodeSession(configuration(deviceToken: deviceToken), nowMs: 0)
        _ = session.received(Self.challenge, nowMs: 1)
        guard case var .object(details) = advice else { return }
        details["code"] = "AUTH_TOKEN_MISMATCH"
        let actions = session.received(
            Self.frame([
                "type": "res", "id": "connect", "ok": false,
                "error": ["code": "INVALID_REQUEST", "message": "unauthorized: gateway token mismatch", "details": .object(details)],
            ]), nowMs: 2)
        guard case let .close(_, got)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(got == retry)
    }

    /// The device token, once held, is what a connect carries (and what its signature binds): a
    /// rotated shared token does not lock the node out.
    @Test func aHeldDeviceTokenIsWhatTheConnectCarries() throws {
        var session = OpenClawNodeSession(configuration(deviceToken: "device-tok"), nowMs: 0)
        let connect = Self.sent(session.received(Self.challenge, nowMs: 1))
        #expect(connect.first?["params"]?["auth"] == ["deviceToken": "device-tok"])
    }

    @Test(arguments: [(JSONValue.string("req-1"), "req-1"), (.null, nil), (.string(""), nil), (.number(7), nil)] as [(JSONValue, String?)])
    func pairingRequiredWaitsForTheGatewaysOperatorUnderItsRequest(requestId: JSONValue, expected: String?) {
        var session = OpenClawNodeSession(configuration(), nowMs: 0)
        _ = session.received(Self.challenge, nowMs: 1)
        let actions = session.received(
            Self.frame([
                "type": "res", "id": "connect", "ok": false,
                "error": [
                    "code": "NOT_PAIRED", "message": "pairing required", "details": ["code": "PAIRING_REQUIRED", "requestId": requestId],
                ],
            ]), nowMs: 2)
        guard case let .close(_, retry)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(retry == .deviceApproval(requestId: expected))
    }

    @Test func theSessionIsIdleOnlyWithNothingInFlight() {
        var session = ready()
        #expect(session.isIdle)
        _ = session.received(
            Self.frame([
                "type": "event", "event": "node.invoke.request",
                "payload": [
                    "id": "inv-1", "nodeId": .string(device.deviceId), "command": "canvas.snapshot",
                ],
            ]), nowMs: 3)
        #expect(!session.isIdle)
        guard case let .send(bytes)? = session.nodeEvent("voice.transcript", payload: ["text": "hi"], tag: "t1").first,
            case let .request(eventRequest, _, _)? = try? GatewayFrame.decode(bytes)
        else { Issue.record("no node.event sent"); return }
        _ = session.nodeAnswered(invokeId: "inv-1", .failure(ErrorMessage(code: "X", message: "x")))
        #expect(!session.isIdle, "the event's reply is still due")
        _ = session.received(Self.frame(["type": "res", "id": .string(eventRequest), "ok": true, "payload": ["ok": true]]), nowMs: 4)
        #expect(session.isIdle)
    }

    @Test func anInvokeIsRelayedInLanbridgesVocabularyAndAnsweredOnce() throws {
        var session = ready()
        let request: JSONValue = [
            "type": "event", "event": "node.invoke.request",
            "payload": [
                "id": "inv-1", "nodeId": .string(device.deviceId), "command": "device.info", "paramsJSON": #"{"detail":true}"#,
                "timeoutMs": 5000, "idempotencyKey": "k-1",
            ],
        ]
        let actions = session.received(Self.frame(request), nowMs: 3)
        #expect(actions == [.invoke(.init(id: "inv-1", command: "system.info", params: ["detail": true], timeoutMs: 5000, idempotencyKey: "k-1", queued: false))])
        #expect(session.received(Self.frame(request), nowMs: 4).isEmpty, "a repeated id is not run twice")

        let result = try #require(Self.sent(session.nodeAnswered(invokeId: "inv-1", .success(.raw(ArraySlice(#"{"os":"linux"}"#.utf8))))).first)
        #expect(result["method"] == "node.invoke.result")
        #expect(result["params"] == ["id": "inv-1", "nodeId": .string(device.deviceId), "ok": true, "payloadJSON": #"{"os":"linux"}"#])
        #expect(session.nodeAnswered(invokeId: "inv-1", .success(.value(nil))).isEmpty, "answered once")

        // A void command's answer carries no payloadJSON (not "null"), as the apps send it (issue 48 §7).
        _ = session.received(
            Self.frame([
                "type": "event", "event": "node.invoke.request",
                "payload": [
                    "id": "inv-2", "nodeId": .string(device.deviceId), "command": "canvas.hide", "timeoutMs": 5000, "idempotencyKey": "k-2",
                ],
            ]), nowMs: 5)
        let void = try #require(Self.sent(session.nodeAnswered(invokeId: "inv-2", .success(.value(nil)))).first)
        #expect(void["params"] == ["id": "inv-2", "nodeId": .string(device.deviceId), "ok": true], "\(void)")
    }

    @Test(arguments: [
        (JSONValue.string("[1,2]"), "INVALID_REQUEST"), (.string(#"{"a":1,"a":2}"#), "INVALID_REQUEST"), (.number(3), "INVALID_REQUEST"),
    ])
    func badParamsAreAnsweredWithoutReachingTheNode(paramsJSON: JSONValue, code: String) throws {
        var session = ready()
        let actions = session.received(
            Self.frame([
                "type": "event", "event": "node.invoke.request",
                "payload": [
                    "id": "x", "nodeId": .string(device.deviceId), "command": "canvas.snapshot", "paramsJSON": paramsJSON,
                ],
            ]), nowMs: 3)
        let result = try #require(Self.sent(actions).first)
        #expect(result["params"]?["ok"] == false && result["params"]?["error"]?["code"] == .string(code))
    }

    @Test func anInvokeForAnotherNodeOrAnUnknownCommandIsRefused() throws {
        var session = ready()
        let wrongNode = session.received(
            Self.frame([
                "type": "event", "event": "node.invoke.request",
                "payload": [
                    "id": "a", "nodeId": "someone-else", "command": "canvas.snapshot",
                ],
            ]), nowMs: 3)
        #expect(Self.sent(wrongNode).first?["params"]?["error"]?["code"] == "INVALID_REQUEST")
        let unknown = session.received(
            Self.frame([
                "type": "event", "event": "node.invoke.request",
                "payload": [
                    "id": "b", "nodeId": .string(device.deviceId), "command": "contacts.search", "paramsJSON": .null,
                ],
            ]), nowMs: 3)
        #expect(Self.sent(unknown).first?["params"]?["error"]?["code"] == "UNKNOWN_COMMAND")
    }

    @Test func aCancelledInvokeIsNotAnswered() {
        var session = ready()
        _ = session.received(
            Self.frame([
                "type": "event", "event": "node.invoke.request",
                "payload": [
                    "id": "c", "nodeId": .string(device.deviceId), "command": "canvas.snapshot",
                ],
            ]), nowMs: 3)
        #expect(
            session.received(Self.frame(["type": "event", "event": "node.invoke.cancel", "payload": ["invokeId": "c", "nodeId": .string(device.deviceId)]]), nowMs: 4)
                == [.cancel(invokeId: "c")])
        #expect(session.nodeAnswered(invokeId: "c", .success(.value(nil))).isEmpty)
    }

    @Test func backInTheForegroundItPullsRunsAndAcknowledgesTheQueue() throws {
        var session = ready()
        let pull = try #require(Self.sent(session.nodeForeground(true)).first)
        #expect(pull["method"] == "node.pending.pull")
        guard case let .string(pullID)? = pull["id"] else { Issue.record("no id"); return }
        let actions = session.received(
            Self.frame([
                "type": "res", "id": .string(pullID), "ok": true,
                "payload": [
                    "nodeId": .string(device.deviceId),
                    "actions": [
                        ["id": "q1", "command": "canvas.snapshot", "paramsJSON": .null, "enqueuedAtMs": 1],
                        ["id": "q2", "command": "canvas.navigate", "paramsJSON": #"{"url":"https://example.com"}"#, "enqueuedAtMs": 2],
                    ],
                ],
            ]), nowMs: 5)
        #expect(actions.count == 2)
        #expect(actions.allSatisfy { if case let .invoke(invoke) = $0 { invoke.queued } else { false } })
        #expect(session.nodeAnswered(invokeId: "q1", .success(.value(nil))).isEmpty, "acknowledged together, once all ran")
        let ack = try #require(Self.sent(session.nodeAnswered(invokeId: "q2", .success(.value(nil)))).first)
        #expect(ack["method"] == "node.pending.ack" && ack["params"] == ["ids": ["q1", "q2"]])
        // The gateway's answer says how many are still queued (the real gateway's remainingCount).
        guard case let .string(ackID)? = ack["id"] else { Issue.record("no id"); return }
        let acknowledged = session.received(
            Self.frame(["type": "res", "id": .string(ackID), "ok": true, "payload": ["nodeId": .string(device.deviceId), "ackedIds": ["q1", "q2"], "remainingCount": 0]]),
            nowMs: 6)
        #expect(acknowledged == [.queueAcknowledged(count: 2, remaining: 0)])
    }

    @Test func aQueuedActionThatMeetsTheBackgroundAgainStaysQueued() throws {
        var session = ready()
        _ = session.nodeForeground(true)
        _ = session.received(
            Self.frame([
                "type": "res", "id": "pull1", "ok": true,
                "payload": [
                    "actions": [
                        ["id": "q1", "command": "canvas.snapshot", "paramsJSON": .null]
                    ]
                ],
            ]), nowMs: 5)
        #expect(session.nodeAnswered(invokeId: "q1", .failure(ErrorMessage(code: ErrorMessage.backgroundUnavailable, message: "bg"))).isEmpty)
    }

    @Test func aSilentGatewayOrASlowHandshakeEndsTheSession() {
        var slow = OpenClawNodeSession(configuration(), nowMs: 0)
        #expect(slow.timer(nowMs: 15_000).isEmpty)
        #expect(slow.timer(nowMs: 15_001).count == 1)

        var session = ready()
        _ = session.received(Self.frame(["type": "event", "event": "tick", "payload": ["ts": 1]]), nowMs: 10_000)
        #expect(session.timer(nowMs: 70_000).isEmpty)
        #expect(session.nextDeadlineMs == 70_001)
        #expect(session.timer(nowMs: 70_001).count == 1)
    }

    /// Issue 37: the gateway's canvas capability for this socket is taken from hello-ok, renewed
    /// with node.canvas.capability.refresh well before OpenClaw's 10 minutes lapse, and nothing
    /// that is not a capability is passed on.
    @Test func theGatewaysCanvasCapabilityIsTakenAndRenewedBeforeItLapses() throws {
        var session = OpenClawNodeSession(configuration(), nowMs: 0)
        _ = session.received(Self.challenge, nowMs: 1)
        let hello = session.received(
            Self.frame([
                "type": "res", "id": "connect", "ok": true,
                "payload": [
                    "type": "hello-ok", "protocol": 4, "policy": ["tickIntervalMs": 30000],
                    "canvasHostUrl": "http://127.0.0.1:18789/__openclaw__/cap/hkD6wLlIyhOHaLnJo_skeNJR",
                ],
            ]), nowMs: 2)
        #expect(hello.contains(.canvasCapability("hkD6wLlIyhOHaLnJo_skeNJR")))
        // Ticks keep the socket up; the refresh is due 4 minutes after the capability came.
        for t in stride(from: Int64(30_000), to: 240_000, by: 30_000) {
            _ = session.received(Self.frame(["type": "event", "event": "tick", "payload": ["ts": 1]]), nowMs: t)
            #expect(Self.sent(session.timer(nowMs: t)).isEmpty)
        }
        #expect(session.nextDeadlineMs == 240_002)
        let due = Self.sent(session.timer(nowMs: 240_002))
        #expect(due.count == 1 && due[0]["method"] == "node.canvas.capability.refresh", "\(due)")
        guard case let .string(id)? = due.first?["id"] else { Issue.record("no request id"); return }
        let renewed = session.received(
            Self.frame([
                "type": "res", "id": .string(id), "ok": true,
                "payload": [
                    "canvasCapability": "NEWcapability_xxxxxxxxxx", "canvasCapabilityExpiresAtMs": 1, "canvasHostUrl": "http://x",
                ],
            ]), nowMs: 240_010)
        #expect(renewed == [.canvasCapability("NEWcapability_xxxxxxxxxx")])
        // A gateway that answers with something that is not a capability changes nothing.
        #expect(OpenClawNodeSession.canvasCapability(inHostURL: "http://127.0.0.1:18789/__openclaw__/cap/a b/") == nil)
        #expect(OpenClawNodeSession.canvasCapability(inHostURL: "http://127.0.0.1:18789/") == nil)
        // Without a canvas host, no refresh is ever asked for.
        var plain = ready()
        _ = plain.received(Self.frame(["type": "event", "event": "tick", "payload": ["ts": 1]]), nowMs: 50_000)
        #expect(plain.nextDeadlineMs == 110_001)
    }

    @Test func theVocabularyTableRenamesAndFiltersBothWays() {
        #expect(OpenClawCommands.openClawName("system.info") == "device.info")
        #expect(OpenClawCommands.lanbridgeName("device.info") == "system.info")
        #expect(OpenClawCommands.openClawName("canvas.snapshot") == "canvas.snapshot")
        #expect(OpenClawCommands.openClawName("device.echo") == nil)
        #expect(OpenClawCommands.lanbridgeName("contacts.search") == nil)
    }

    /// Issue 41: a gateway that never answers cannot grow the table of calls waiting for replies.
    @Test func callsWaitingForTheGatewaysReplyAreBounded() {
        var session = ready()
        var refused = 0
        for n in 0..<(OpenClawNodeSession.maxEventsWaiting + 10) {
            let actions = session.nodeEvent("agent.request", payload: ["message": "m"], tag: "t\(n)")
            if case .eventAnswered(_, .failure)? = actions.first { refused += 1 }
        }
        #expect(refused == 10, "past the bound, calls are refused at once instead of kept")
    }
}
