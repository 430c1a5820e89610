import LanbridgeCrypto
import LanbridgeProtocol
import Testing

/// Issue 38: the gateway side of OpenClaw's protocol for the apps, sans I/O: each forged or
/// stale connect is refused with OpenClaw's detail code, and nothing reaches the core.
struct OpenClawAppSessionTests {
    static let now: Int64 = 1_795_000_000_000
    let key = Ed25519.KeyPair.generate()
    var device: OpenClawDevice { OpenClawDevice(key: key) }
    let claims = OpenClawDevice.Claims(clientId: "openclaw-ios", clientMode: "node", role: "node", scopes: [], platform: "iOS 18.2", deviceFamily: "iPhone")

    func session() -> (OpenClawAppSession, nonce: String) {
        let session = OpenClawAppSession(nonce: "n-123", nowMs: Self.now)
        return (session, "n-123")
    }

    func connect(
        nonce: String = "n-123", signedAt: Int64 = now, signer: OpenClawDevice? = nil, claimedId: String? = nil, role: String = "node",
        min: Int = 3, max: Int = 3, version: OpenClawDevice.PayloadVersion = .v3
    ) -> [UInt8] {
        let signing = signer ?? device
        var proof = signing.proof(version, claims: claims, signedAtMs: signedAt, token: "", nonce: nonce)
        if let claimedId, case var .object(fields) = proof {
            fields["id"] = .string(claimedId)
            proof = .object(fields)
        }
        if let signer, case var .object(fields) = proof {  // another key's signature over our device's claims
            fields["publicKey"] = .string(device.publicKey)
            fields["id"] = .string(device.deviceId)
            proof = .object(fields)
            _ = signer
        }
        let params: JSONValue = [
            "minProtocol": .number(Double(min)), "maxProtocol": .number(Double(max)), "role": .string(role), "scopes": [],
            "client": ["id": "openclaw-ios", "mode": "node", "platform": "iOS 18.2", "deviceFamily": "iPhone", "displayName": "Ada's iPhone", "version": "1"],
            "commands": ["canvas.navigate", "device.info", "not.a.command"], "caps": ["canvas"], "device": proof, "auth": [:],
        ]
        return GatewayFrame.request(id: "c1", method: "connect", params: params).encoded()
    }

    static func refusal(_ actions: [OpenClawAppSession.Action]) -> String? {
        for case let .send(bytes, _) in actions {
            if case let .response(_, .failure(error))? = try? GatewayFrame.decode(bytes), case let .string(code)? = error.details?["code"] { return code }
        }
        return nil
    }

    @Test func aGoodConnectIsAuthenticatedWithTheAppsCommandsInLanbridgesNames() throws {
        var (s, _) = session()
        let actions = s.received(connect(), binary: true, nowMs: Self.now + 50)
        guard case let .authenticated(d)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(d.deviceId == device.deviceId && d.protocolVersion == 3 && d.commands == ["canvas.navigate", "system.info"])
        #expect(d.details.platform == "ios" && d.details.flags.requiresForeground)
        // The core says paired: hello-ok, in the app's own framing (binary for iOS).
        let hello = s.fromBridge(Welcome(bridgeName: "b", paired: true, nodeId: OpenClawAppClaimKey.fingerprint(d)), nowMs: Self.now + 60)
        guard case let .send(bytes, binary)? = hello.first, case let .response("c1", .success(payload))? = try? GatewayFrame.decode(bytes) else {
            Issue.record("\(hello)"); return
        }
        #expect(binary && payload?["type"] == "hello-ok" && payload?["protocol"] == 3 && payload?["snapshot"]?["stateVersion"] != nil)
        #expect(s.isReady)
        // A v4 app gets 4; the v2 signature of an older client still verifies.
        var (v4, _) = session()
        guard case let .authenticated(d4)? = v4.received(connect(min: 3, max: 4, version: .v2), binary: false, nowMs: Self.now).first else {
            Issue.record("v2/v4 refused"); return
        }
        #expect(d4.protocolVersion == 4)
    }

    @Test func forgedStaleAndReplayedConnectsAreRefusedWithOpenClawsCodes() {
        let other = OpenClawDevice(key: .generate())
        let cases: [(String, [UInt8])] = [
            ("DEVICE_AUTH_SIGNATURE_INVALID", connect(signer: other)),  // another key signed
            ("DEVICE_AUTH_DEVICE_ID_MISMATCH", connect(claimedId: String(repeating: "a", count: 64))),  // an ID that is not the key's
            ("DEVICE_AUTH_NONCE_MISMATCH", connect(nonce: "n-old")),  // a replayed connect
            ("DEVICE_AUTH_SIGNATURE_EXPIRED", connect(signedAt: Self.now - 121_000)),  // stale
            ("DEVICE_AUTH_SIGNATURE_EXPIRED", connect(signedAt: Self.now + 121_000)),  // from the future
            ("ROLE_NOT_ALLOWED", connect(role: "operator")),  // chat and talk
            ("PROTOCOL_MISMATCH", connect(min: 5, max: 6)),
        ]
        for (code, frame) in cases {
            var (s, _) = session()
            let actions = s.received(frame, binary: false, nowMs: Self.now)
            #expect(Self.refusal(actions) == code, "\(code): \(actions)")
            #expect(!actions.contains { if case .authenticated = $0 { true } else { false } })
            #expect(actions.contains { if case .close(1008, _) = $0 { true } else { false } })
        }
    }

    @Test func anythingButConnectBeforeItClosesAndTheHandshakeHasADeadline() {
        var (s, _) = session()
        let early = s.received(GatewayFrame.request(id: "x", method: "node.event", params: [:]).encoded(), binary: false, nowMs: Self.now)
        #expect(early.contains { if case .close(1008, _) = $0 { true } else { false } })
        var (bad, _) = session()
        #expect(bad.received(Array("not json".utf8), binary: false, nowMs: Self.now) == [.close(code: 1008, reason: "invalid frame")])
        var (slow, _) = session()
        #expect(slow.timer(nowMs: Self.now + 10_000).isEmpty)
        #expect(slow.timer(nowMs: Self.now + 10_001) == [.close(code: 1008, reason: "handshake timeout")])
    }

    @Test func afterHelloInvokesResultsAndUnknownMethodsMapBothWays() throws {
        var (s, _) = session()
        _ = s.received(connect(), binary: false, nowMs: Self.now)
        _ = s.fromBridge(Welcome(bridgeName: "b", paired: true, nodeId: Fingerprint(publicKey: SecureRandom.bytes(32))), nowMs: Self.now)
        // An invoke goes out in OpenClaw's names, its params as paramsJSON.
        let out = s.fromBridge(Invoke(id: "r7", command: "system.info", params: ["a": 1], timeoutMs: 5000), nowMs: Self.now)
        guard case let .send(bytes, false)? = out.first, case let .event("node.invoke.request", payload)? = try? GatewayFrame.decode(bytes) else {
            Issue.record("\(out)"); return
        }
        #expect(payload?["command"] == "device.info" && payload?["paramsJSON"] == #"{"a":1}"# && payload?["nodeId"] == .string(device.deviceId))
        // Android's parsed payload and iOS's payloadJSON both become the one invoke.result.
        for params: JSONValue in [["id": "r7", "ok": true, "payload": ["x": 1]], ["id": "r7", "ok": true, "payloadJSON": #"{"x":1}"#]] {
            let back = s.received(GatewayFrame.request(id: "q", method: "node.invoke.result", params: params).encoded(), binary: false, nowMs: Self.now)
            guard case let .toBridge(message)? = back.first else { Issue.record("\(back)"); continue }
            #expect(JSONValue(validated: message) == ["type": "invoke.result", "id": "r7", "ok": true, "payload": ["x": 1]])
        }
        // A void command's result (iOS canvas.hide: no payloadJSON) stays without a payload, so the
        // gateway hears what it would from the app itself (issue 48 §7).
        for params: JSONValue in [["id": "r8", "ok": true], ["id": "r8", "ok": true, "payload": .null]] {
            let back = s.received(GatewayFrame.request(id: "q", method: "node.invoke.result", params: params).encoded(), binary: false, nowMs: Self.now)
            guard case let .toBridge(message)? = back.first else { Issue.record("\(back)"); continue }
            #expect(JSONValue(validated: message) == ["type": "invoke.result", "id": "r8", "ok": true])
        }
        // Any well-formed node.event hears {ok: true}, as OpenClaw answers handled, unknown and
        // dropped events alike; the core decides what the gateway hears.
        let event = s.received(
            GatewayFrame.request(id: "e1", method: "node.event", params: ["event": "not.in.the.catalogue", "payloadJSON": "{}"]).encoded(),
            binary: false, nowMs: Self.now)
        let replies = event.compactMap { action -> GatewayFrame? in if case let .send(bytes, _) = action { try? GatewayFrame.decode(bytes) } else { nil } }
        #expect(replies == [.response(id: "e1", result: .success(["ok": true]))], "\(replies)")
        let broken = s.received(
            GatewayFrame.request(id: "q", method: "node.invoke.result", params: ["id": "r7", "ok": true, "payloadJSON": "{bad"]).encoded(),
            binary: false, nowMs: Self.now)
        #expect(!broken.contains { if case .toBridge = $0 { true } else { false } })
        // Methods of the operator's or unknown ones: refused and counted; nothing reaches the core.
        let chat = s.received(GatewayFrame.request(id: "q2", method: "chat.send", params: [:]).encoded(), binary: false, nowMs: Self.now)
        #expect(s.unknown == 1 && !chat.contains { if case .toBridge = $0 { true } else { false } })
        // The core's ping is the session's to answer; a revoke closes.
        #expect(s.fromBridge(Ping(id: 3), nowMs: Self.now) == [.toBridge(SessionMessages.encode(Pong(id: 3)))])
        #expect(s.fromBridge(Revoked(nodeId: Fingerprint(publicKey: SecureRandom.bytes(32))), nowMs: Self.now).contains { if case .close(1008, _) = $0 { true } else { false } })
    }
}

/// The fingerprint a test may give the welcome (the core's is a hash of the device key).
enum OpenClawAppClaimKey {
    static func fingerprint(_ device: OpenClawAppSession.Device) -> Fingerprint { Fingerprint(publicKey: SHA256.hash(device.publicKey)) }
}
