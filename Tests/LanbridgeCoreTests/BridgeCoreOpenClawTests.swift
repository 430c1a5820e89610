import Foundation
import LanbridgeCrypto
@testable import LanbridgeCore
@testable import LanbridgeProtocol
@testable import LanbridgeState
import Testing

/// The core with the OpenClaw gateway protocol: presence instead of §12 events, and the gateway's
/// invokes through the same gate, answered to the node's own socket.
struct BridgeCoreOpenClawTests {
    let base = BridgeCoreTests()

    func core() throws -> BridgeCore {
        var core = try base.core(gatewayUp: false, gateway: .openClaw)
        return core
    }

    static func presence(_ actions: [BridgeAction]) -> [NodePresence.Change] {
        actions.compactMap { if case let .nodePresence(presence) = $0 { presence.change } else { nil } }
    }

    @Test func aConnectingNodeIsAnnouncedWithTheCommandsItsRulesAllowInOpenClawsNames() throws {
        var core = try core()
        let opened = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        // Declared camera.snap and device.info, both allowed; OpenClaw knows camera.snap, and not
        // lanbridge's device.info (its own device.info is lanbridge's system.info).
        guard case let .online(details, commands, foreground)? = Self.presence(opened).first else { Issue.record("\(opened)"); return }
        #expect(details.displayName == "Ada's phone" && commands == ["camera.snap"] && foreground)
        #expect(BridgeCoreTests.events(opened).isEmpty, "no §12 events")
        #expect(
            Self.presence(core.on(.received(Array(#"{"type":"state","foreground":false}"#.utf8), from: 1), now: base.t0 + 1, wall: base.wall))
                == [.foreground(false)])
        #expect(Self.presence(core.on(.closed(1), now: base.t0 + 2)) == [.offline])
    }

    /// Bug: a node whose session was replaced lost its gateway device ID from runtime.json (its
    /// gateway socket stays up, so nothing reported it again).
    @Test func aReplacedSessionKeepsTheGatewaySessionState() throws {
        var core = try core()
        let node = Fingerprint(publicKey: base.phoneKey.publicKey)
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let approval = RuntimeStatus.GatewayApproval.device("req-1")
        _ = core.on(.openClawSession(node: node, deviceId: "dev", state: approval.summary, approval: approval))
        _ = core.on(.opened(base.opening(2)), now: base.t0 + 1, wall: base.wall)
        #expect(core.runtimeFile().nodes[node.description]?.gatewayDeviceId == "dev")
        #expect(core.runtimeFile().nodes[node.description]?.gatewaySession == approval.summary)
        #expect(core.runtimeFile().nodes[node.description]?.gatewayApproval == approval)
    }

    /// Issue 60 §4: the gateway keeps a revoked node's device, token and node.list entry, and a
    /// node's socket cannot remove them. runtime.json names every node's device ID, connected or
    /// not, and a revocation is audited and logged with what removes them at the gateway.
    @Test func aRevokedNodesGatewayDeviceIsAuditedWithItsCleanup() throws {
        var core = try core()
        let node = Fingerprint(publicKey: base.phoneKey.publicKey)
        let gone = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)
        let removedAtStart = core.on(.openClawDevices(kept: [node: "dev-phone"], removed: [gone: "dev-gone"]), now: base.t0, wall: base.wall)
        #expect(core.runtimeFile().openClawDevices == [node.description: "dev-phone"])
        #expect(Self.audit(removedAtStart).map(\.detail) == ["device dev-gone: \(OpenClawCommands.cleanup(deviceId: "dev-gone"))"])

        _ = core.on(.opened(base.opening(1)), now: base.t0 + 1, wall: base.wall)
        _ = core.on(.openClawSession(node: node, deviceId: "dev-phone", state: "connected (protocol 3)", approval: nil), now: base.t0 + 2)
        var state = core.lastState
        _ = try state.revoke(nodeId: node.description)
        let revoked = core.on(.storeChanged(state, version: "v2"), now: base.t0 + 3, wall: base.wall)
        let entries = Self.audit(revoked)
        #expect(entries.map(\.event) == ["openclaw.device.kept"] && entries.first?.nodeId == node.description, "\(entries)")
        #expect(entries.first?.detail?.contains("openclaw devices remove dev-phone") == true)
        #expect(core.runtimeFile().openClawDevices?[node.description] == nil)
    }

    static func audit(_ actions: [BridgeAction]) -> [AuditEntry] {
        actions.flatMap { action -> [AuditEntry] in
            guard case let .audit(entries) = action else { return [] }
            return entries
        }
    }

    /// Issue 23: a rule change reached the gateway only at the node's next connection.
    @Test func aRuleChangeReoffersTheNodesCommandsWithoutDroppingTheNode() throws {
        var core = try core()
        let node = Fingerprint(publicKey: base.phoneKey.publicKey)
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        var state = core.lastState
        _ = try state.deny("camera.snap", node: node.description)
        let denied = core.on(.storeChanged(state, version: "v2"), now: base.t0 + 1)
        #expect(Self.presence(denied) == [.commands([])])
        #expect(!denied.contains { if case .close = $0 { true } else { false } }, "the node stays connected")
        #expect(Self.presence(core.on(.storeChanged(state, version: "v3"), now: base.t0 + 2)).isEmpty, "nothing changed: nothing re-offered")
        _ = try state.allow("camera.snap", node: node.description)
        #expect(Self.presence(core.on(.storeChanged(state, version: "v4"), now: base.t0 + 3)) == [.commands(["camera.snap"])])

        // A reloaded config (SIGHUP) can change the offer too: here camera.* counted as input
        // injection, which this node says it cannot do.
        var settings = core.settings
        settings.policy.inputCommands = [try CommandPattern("camera.*")]
        #expect(Self.presence(core.on(.reload(settings))) == [.commands([])])
    }

    /// Issue 39: `openClawCancel` took no time, so it kept the cancelled answer under the previous
    /// event's clock: here the invoke's, 110 s earlier, and a retry 90 s after the cancel ran again.
    @Test func aCancelIsTimedWhenItHappens() throws {
        var core = try core()
        let node = Fingerprint(publicKey: base.phoneKey.publicKey)
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let invoke = OpenClawNodeSession.Invoke(id: "oc-1", command: "camera.snap", params: nil, timeoutMs: 300_000, idempotencyKey: "k", queued: false)
        #expect(BridgeCoreTests.invokeSent(core.on(.openClawInvoke(node: node, invoke), now: base.t0, wall: base.wall)) != nil)
        let cancelled = core.on(.openClawCancel(node: node, invokeID: "oc-1"), now: base.t0 + 110)
        #expect(Self.code(BridgeCoreTests.answers(cancelled).first?.1) == ErrorMessage.cancelled, "\(cancelled)")
        // The same request again, 90 s after the cancel: the kept answer, not a second run.
        let retry = OpenClawNodeSession.Invoke(id: "oc-2", command: "camera.snap", params: nil, timeoutMs: 300_000, idempotencyKey: "k", queued: false)
        let again = core.on(.openClawInvoke(node: node, retry), now: base.t0 + 200, wall: base.wall)
        #expect(BridgeCoreTests.invokeSent(again) == nil, "ran again: \(again)")
        #expect(Self.code(BridgeCoreTests.answers(again).first?.1) == ErrorMessage.cancelled, "\(again)")
    }

    /// Issue 39: NodeDescription read the clock itself; a connected node's "last seen" is now the
    /// event's wall time, as the core is given it.
    @Test func aConnectedNodesLastSeenIsTheEventsTime() throws {
        var core = try core()
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let later = base.wall.addingTimeInterval(3600)
        let answered = core.on(
            .request(method: ControlMethod.nodeDescribe.name, params: ["nodeId": .string(Fingerprint(publicKey: base.phoneKey.publicKey).description)], from: .control(1)),
            now: base.t0 + 3600, wall: later)
        guard case let .success(payload)? = BridgeCoreTests.answers(answered).first?.1, case let .value(value?) = payload else {
            Issue.record("\(answered)"); return
        }
        #expect(value["lastSeen"] == .string(later.formatted(.iso8601)), "\(value)")
    }

    static func code(_ answer: InvokeAnswer?) -> String? {
        if case let .failure(error)? = answer { error.code } else { nil }
    }

    @Test func theGatewaysInvokeGoesThroughTheGateAndIsAnsweredOnTheNodesSocket() throws {
        var core = try core()
        let node = Fingerprint(publicKey: base.phoneKey.publicKey)
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let invoke = OpenClawNodeSession.Invoke(id: "oc-1", command: "camera.snap", params: nil, timeoutMs: 1000, idempotencyKey: "k", queued: false)
        let relayed = core.on(.openClawInvoke(node: node, invoke), now: base.t0, wall: base.wall)
        let sent = try #require(BridgeCoreTests.invokeSent(relayed))
        let answered = core.on(.received(base.result(for: sent), from: 1), now: base.t0 + 0.1, wall: base.wall)
        #expect(BridgeCoreTests.answers(answered).first?.0 == .openClaw(node: node, invokeID: "oc-1"))

        // The gate's rules first: a command the operator did not allow never reaches the node.
        let denied = core.on(
            .openClawInvoke(node: node, .init(id: "oc-2", command: "screen.record", params: nil, timeoutMs: nil, idempotencyKey: nil, queued: false)), now: base.t0 + 1,
            wall: base.wall)
        #expect(BridgeCoreTests.invokeSent(denied) == nil)
        #expect(BridgeCoreTests.answers(denied).first?.1.failureCode == ErrorMessage.forbidden)

        // The background fast-fail, with the code OpenClaw queues on.
        _ = core.on(.received(Array(#"{"type":"state","foreground":false}"#.utf8), from: 1), now: base.t0 + 2, wall: base.wall)
        let background = core.on(
            .openClawInvoke(node: node, .init(id: "oc-3", command: "camera.snap", params: nil, timeoutMs: nil, idempotencyKey: nil, queued: false)), now: base.t0 + 3,
            wall: base.wall)
        #expect(BridgeCoreTests.answers(background).first?.1.failureCode == ErrorMessage.backgroundUnavailable)
    }

    /// Issue 23: a node's agent call becomes a node.event on its socket, within the same `agent`
    /// limit as §12, and the gateway's reply goes back to the node.
    @Test func aNodesAgentCallBecomesANodeEventWithinTheSameLimits() throws {
        var core = try core()
        let node = Fingerprint(publicKey: base.phoneKey.publicKey)
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        func call(_ n: Int, _ params: String) -> [BridgeAction] {
            core.on(
                .received(Array(#"{"type":"gateway.call","id":"c\#(n)","method":"agent","params":\#(params),"idempotencyKey":"k\#(n)"}"#.utf8), from: 1), now: base.t0 + 1,
                wall: base.wall)
        }
        let voice = call(0, #"{"message":"lights off","source":"voice","sessionKey":"main","nodeId":"forged"}"#)
        guard case let .openClawEvent(to, event, payload, tag?)? = voice.first(where: { if case .openClawEvent = $0 { true } else { false } }) else {
            Issue.record("\(voice)")
            return
        }
        #expect(to == node && event == "voice.transcript")
        #expect(payload == ["text": "lights off", "sessionKey": "main", "eventId": "k0"], "only what upstream reads")
        let replied = core.on(.openClawEventAnswered(tag: tag, .success(["ok": true, "handled": true])))
        guard let result = BridgeCoreTests.sent(replied, to: 1).first as? GatewayCallResult else { Issue.record("\(replied)"); return }
        #expect(result.id == "c0" && result.ok && result.payload?["handled"] == true)

        // The same per-node agent limit as §12: past it, RATE_LIMITED and nothing for the gateway.
        var limited: GatewayCallResult?
        for n in 1...(core.settings.limits[.agentPerMinute] + 1) {
            let actions = call(n, #"{"message":"again"}"#)
            if let refused = BridgeCoreTests.sent(actions, to: 1).first as? GatewayCallResult {
                limited = refused
                #expect(!actions.contains { if case .openClawEvent = $0 { true } else { false } })
                break
            }
        }
        #expect(limited?.error?.code == ErrorMessage.rateLimited)
    }
}

/// Issue 36 §5: a node's own events reach an OpenClaw gateway only as the catalogue allows.
extension BridgeCoreOpenClawTests {
    func event(_ name: String, _ payload: String = #"{"sessionKey":"agent:main:other","runId":"r1"}"#) -> [UInt8] {
        Array(#"{"type":"event","event":"\#(name)","payload":\#(payload)}"#.utf8)
    }

    static func toGateway(_ actions: [BridgeAction]) -> [(String, JSONValue)] {
        actions.compactMap { if case let .openClawEvent(_, event, payload, _) = $0 { (event, payload) } else { nil } }
    }

    static func audited(_ actions: [BridgeAction]) -> [String] {
        var lines: [String] = []
        for case let .audit(entries) in actions { lines += entries.map { "\($0.event) \($0.detail ?? "")" } }
        return lines
    }

    @Test func eventsOutsideTheCatalogueOrTheirGrantsAreRefusedAndAudited() throws {
        var core = try core()
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        for name in ["chat.subscribe", "exec.finished", "notifications.changed", "my.custom"] {
            let actions = core.on(.received(event(name), from: 1), now: base.t0 + 1, wall: base.wall)
            #expect(Self.toGateway(actions).isEmpty, "\(name) reached the gateway")
            #expect(Self.audited(actions).contains { $0.hasPrefix("event.denied \(name):") }, "\(name): \(Self.audited(actions))")
        }
        // Presence reports pass, without a session key.
        let alive = Self.toGateway(core.on(.received(event("node.presence.alive", #"{"trigger":"manual","sessionKey":"x"}"#), from: 1), now: base.t0 + 2, wall: base.wall))
        #expect(alive.first?.0 == "node.presence.alive" && alive.first?.1["sessionKey"] == nil && alive.first?.1["trigger"] == "manual")
    }

    @Test func execEventsNeedSystemRunGoToTheNodesOwnSessionAndCountAsAgentCalls() throws {
        var core = try core()
        let node = Fingerprint(publicKey: base.phoneKey.publicKey)
        var state = core.lastState
        let index = try #require(state.paired.nodes.firstIndex { $0.nodeId == node })
        state.paired.nodes[index].details.commands.append("system.run")
        state.paired.nodes[index].access.allow.append("system.run")
        _ = core.on(.storeChanged(state, version: "v2"), now: base.t0)
        _ = core.on(.opened(base.opening(1)), now: base.t0, wall: base.wall)
        let passed = Self.toGateway(core.on(.received(event("exec.finished"), from: 1), now: base.t0 + 1, wall: base.wall))
        #expect(passed.first?.0 == "exec.finished" && passed.first?.1["sessionKey"] == nil && passed.first?.1["runId"] == "r1", "\(passed)")
        // They wake the agent, so the agent rate counts them: past it they are dropped.
        var through = 1
        for k in 0..<200 where !Self.toGateway(core.on(.received(event("exec.started"), from: 1), now: base.t0 + 1 + Double(k) / 1000, wall: base.wall)).isEmpty {
            through += 1
        }
        #expect(through < 200, "\(through) of 201 went through in a fifth of a second")
    }
}
