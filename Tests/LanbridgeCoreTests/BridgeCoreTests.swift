import Foundation
import LanbridgeCrypto
@testable import LanbridgeCore
import LanbridgeCoreWalk
@testable import LanbridgeProtocol
@testable import LanbridgeState
import Logging
import Testing

/// The core on its own: events in, actions out, a fake clock. Each regression case here names the
/// bug it holds down (issue 11's list).
struct BridgeCoreTests {
    let t0 = Moment(seconds: 1000)
    let wall = Date(timeIntervalSince1970: 1_800_000_000)
    let phoneKey = X25519.KeyPair.generate()

    /// A core with one paired node (`camera.snap` and `device.info` allowed and declared) and a
    /// gateway link of generation 1 up.
    func core(gatewayUp: Bool = true, gateway: BridgeCore.GatewayKind = .lanbridge) throws -> BridgeCore {
        var core = try CoreWalk.pairedCore(key: phoneKey, wall: wall, gateway: gateway)
        if gatewayUp { _ = core.on(.gatewayUp(generation: 1), now: t0) }
        return core
    }

    var nodeId: String { Fingerprint(publicKey: phoneKey.publicKey).description }

    func opening(_ id: ConnectionID) -> BridgeCore.Opening {
        .init(
            id: id, handshake: .init(remoteStaticKey: phoneKey.publicKey, handshakeHash: Array(repeating: 1, count: 32), version: 1, handshake: .xx),
            address: "10.0.0.5", peer: "10.0.0.5:4000", slot: nil)
    }

    /// A gateway's node.invoke params (a fresh idempotency key unless given).
    func invoke(_ command: String = "device.info", timeoutMs: Int? = nil, key: String = UUID().uuidString) -> JSONValue {
        var params: [String: JSONValue] = ["nodeId": .string(nodeId), "command": .string(command), "idempotencyKey": .string(key)]
        if let timeoutMs { params["timeoutMs"] = .number(Double(timeoutMs)) }
        return .object(params)
    }

    // MARK: - Reading actions

    static func sent(_ actions: [BridgeAction], to id: ConnectionID? = nil) -> [any SessionMessage] {
        actions.compactMap { if case let .send(to, message) = $0, id == nil || to == id { message } else { nil } }
    }

    static func answers(_ actions: [BridgeAction]) -> [(AnswerTarget, InvokeAnswer)] {
        actions.compactMap { if case let .answer(target, answer) = $0 { (target, answer) } else { nil } }
    }

    static func events(_ actions: [BridgeAction]) -> [String] {
        actions.compactMap {
            if case let .toGateway(_, .event(GatewayMethod.nodeEvent, payload)) = $0, case let .string(type)? = payload?["type"] { type } else { nil }
        }
    }

    static func invokeSent(_ actions: [BridgeAction]) -> Invoke? {
        sent(actions).compactMap { $0 as? Invoke }.first
    }

    func result(for invoke: Invoke, ok: Bool = true) -> [UInt8] {
        Array("{\"type\":\"invoke.result\",\"id\":\"\(invoke.id)\",\"ok\":\(ok),\"payload\":{\"x\":1}}".utf8)
    }

    // MARK: - Sessions

    /// Bug: `welcome` was not always the bridge's first message on a paired session.
    @Test func theWelcomeIsThePairedSessionsFirstMessageAndItIsFindableOnlyAfter() throws {
        var core = try core()
        let actions = core.on(.opened(opening(1)), now: t0, wall: wall)
        let toNode = actions.filter { if case .send(1, _) = $0 { true } else if case .authorize(1) = $0 { true } else { false } }
        guard case .authorize(1) = toNode.first, case let .send(1, welcome as Welcome) = toNode.dropFirst().first else {
            Issue.record("expected authorize then welcome, got \(toNode)")
            return
        }
        #expect(welcome.paired)
        #expect(Self.events(actions) == ["connected"])
        // Within the same event nothing else could run; the next event finds the session.
        let relayed = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(), from: .gateway(generation: 1, requestID: "g1")), now: t0, wall: wall)
        #expect(Self.invokeSent(relayed) != nil)
    }

    /// Issue 25: a paired node learns where else the bridge listens; an unpaired key learns nothing.
    @Test func onlyAPairedNodesWelcomeListsTheBridgesAddresses() throws {
        var core = try core()
        _ = core.on(.listening(["192.168.1.10:18790", "100.64.0.7:18790"], reachable: ["192.168.1.10:18790", "100.64.0.7:18790"]))
        let paired = Self.sent(core.on(.opened(opening(1)), now: t0, wall: wall), to: 1).compactMap { $0 as? Welcome }.first
        #expect(paired?.paired == true && paired?.addresses == ["192.168.1.10:18790", "100.64.0.7:18790"])
        let stranger = X25519.KeyPair.generate()
        let actions = core.on(
            .opened(
                .init(
                    id: 2, handshake: .init(remoteStaticKey: stranger.publicKey, handshakeHash: [], version: 1, handshake: .xx),
                    address: "10.0.0.9", peer: "10.0.0.9:1", slot: 3)), now: t0, wall: wall)
        let unpaired = Self.sent(actions, to: 2).compactMap { $0 as? Welcome }.first
        #expect(unpaired?.paired == false && unpaired?.addresses == nil)
    }

    /// Bug: a replaced session announced `disconnected` then `connected`.
    @Test func aReplacedSessionIsNotADisconnect() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        let second = core.on(.opened(opening(2)), now: t0 + 1, wall: wall)
        #expect(Self.events(second) == ["connected"], "no disconnected for the old session")
        #expect(Self.sent(second, to: 1).contains { ($0 as? ErrorMessage)?.code == ErrorMessage.replaced })
        #expect(second.contains { if case .close(1) = $0 { true } else { false } })
        // The old channel's close arrives later: still nothing for the gateway.
        #expect(Self.events(core.on(.closed(1), now: t0 + 2)) == [])
        #expect(core.runtimeFile().nodes[nodeId] != nil, "the node is still connected")
        #expect(Self.events(core.on(.closed(2), now: t0 + 3)) == ["disconnected"])
    }

    /// Bug: two opens interleaving could share a connection ID. The driver now numbers channels
    /// on accept, before any await; the core keeps connections apart by that number.
    @Test func closingOneConnectionLeavesAnotherAlone() throws {
        var core = try core()
        let other = X25519.KeyPair.generate()
        _ = core.on(
            .opened(
                .init(
                    id: 7, handshake: .init(remoteStaticKey: other.publicKey, handshakeHash: [], version: 1, handshake: .xx),
                    address: "10.0.0.9", peer: "10.0.0.9:1", slot: 3)), now: t0, wall: wall)
        _ = core.on(.opened(opening(8)), now: t0, wall: wall)
        let closed = core.on(.closed(7), now: t0 + 1)
        #expect(closed.contains { if case .releaseSlot(3) = $0 { true } else { false } })
        #expect(core.connections[8] != nil && core.pairedConnection(Fingerprint(publicKey: phoneKey.publicKey))?.id == 8)
    }

    // MARK: - Invokes

    @Test func anInvokeRoundTripsAndTimesOutOnTheFakeClock() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        let out = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(), from: .gateway(generation: 1, requestID: "g1")), now: t0, wall: wall)
        let sentInvoke = try #require(Self.invokeSent(out))
        let answered = core.on(.received(result(for: sentInvoke), from: 1), now: t0 + 0.01, wall: wall)
        let answer = try #require(Self.answers(answered).first)
        #expect(answer.0 == .gateway(generation: 1, requestID: "g1"))
        guard case .success(.raw) = answer.1 else { Issue.record("\(answer.1)"); return }

        let slow = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(timeoutMs: 500), from: .gateway(generation: 1, requestID: "g2")), now: t0 + 1, wall: wall)
        let deadline = try #require(slow.compactMap { if case let .armTimer(at) = $0 { at } else { nil } }.first)
        #expect(deadline <= t0 + 1.5)
        #expect(Self.answers(core.on(.timerFired, now: t0 + 1.2)).isEmpty, "not yet")
        let timedOut = try #require(Self.answers(core.on(.timerFired, now: t0 + 1.5)).first)
        #expect(timedOut.0 == .gateway(generation: 1, requestID: "g2"))
        #expect((try? timedOut.1.get()) == nil && timedOut.1.failureCode == ErrorMessage.timeout)
    }

    /// Issue 21: a result was accepted from any of the node's connections, so a handler of the old
    /// session finishing late answered whatever the new session had been sent under that ID.
    @Test func aResultOnlyAnswersOnTheConnectionItsInvokeWentOutOn() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        let out = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(), from: .gateway(generation: 1, requestID: "g1")), now: t0, wall: wall)
        let sentInvoke = try #require(Self.invokeSent(out))
        // The node reconnects: the old session's invoke fails at once (retryable), not after its timeout.
        let replaced = core.on(.opened(opening(2)), now: t0 + 0.1, wall: wall)
        let failed = try #require(Self.answers(replaced).first)
        #expect(failed.0 == .gateway(generation: 1, requestID: "g1") && failed.1.failureCode == ErrorMessage.nodeNotConnected)
        // The old handler's answer, arriving on the new connection, answers nothing.
        let next = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(), from: .gateway(generation: 1, requestID: "g2")), now: t0 + 0.2, wall: wall)
        let second = try #require(Self.invokeSent(next))
        #expect(second.id != sentInvoke.id)
        #expect(Self.answers(core.on(.received(result(for: sentInvoke), from: 2), now: t0 + 0.3, wall: wall)).isEmpty)
        // Nor does anything on the old connection answer the new invoke.
        #expect(Self.answers(core.on(.received(result(for: second), from: 1), now: t0 + 0.3, wall: wall)).isEmpty)
        let answer = try #require(Self.answers(core.on(.received(result(for: second), from: 2), now: t0 + 0.4, wall: wall)).first)
        #expect(answer.0 == .gateway(generation: 1, requestID: "g2"))
    }

    /// Issue 21: 256 answers were kept for all nodes together, so under load a retry came after
    /// its answer was forgotten and ran the command again. The window is time and bytes now.
    @Test func aRetryAfterTenThousandOtherInvokesIsAnsweredFromTheWindow() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        func run(_ key: String, _ requestID: String, at now: Moment) throws -> [BridgeAction] {
            let out = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(key: key), from: .gateway(generation: 1, requestID: requestID)), now: now, wall: wall)
            guard let sent = Self.invokeSent(out) else { return out }
            return core.on(.received(result(for: sent), from: 1), now: now, wall: wall)
        }
        _ = try run("sms-1", "g0", at: t0)
        for k in 0..<10_000 { _ = try run("other-\(k)", "g\(k + 1)", at: t0 + Double(k) / 1000) }
        let retry = core.on(
            .request(method: ControlMethod.nodeInvoke.name, params: invoke(key: "sms-1"), from: .gateway(generation: 1, requestID: "again")),
            now: t0 + 30, wall: wall)
        #expect(Self.invokeSent(retry) == nil, "the command ran twice")
        #expect(Self.answers(retry).first?.0 == .gateway(generation: 1, requestID: "again"))
        // The window is 120 s: after it, the key is free again.
        let later = core.on(
            .request(method: ControlMethod.nodeInvoke.name, params: invoke(key: "sms-1"), from: .gateway(generation: 1, requestID: "later")),
            now: t0 + 200, wall: wall)
        #expect(Self.invokeSent(later) != nil)
    }

    /// Bug: an answer from before a reconnect could reach a restarted gateway under an ID it reused.
    @Test func anAnswerForAnEarlierLinkIsDropped() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        let out = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(), from: .gateway(generation: 1, requestID: "g1")), now: t0, wall: wall)
        let sentInvoke = try #require(Self.invokeSent(out))
        let down = core.on(.gatewayDown(generation: 1), now: t0 + 0.1)
        #expect(Self.answers(down).isEmpty, "the link that asked is gone: its UNAVAILABLE goes nowhere")
        _ = core.on(.gatewayUp(generation: 2), now: t0 + 0.2)
        let late = core.on(.received(result(for: sentInvoke), from: 1), now: t0 + 0.3, wall: wall)
        #expect(Self.answers(late).isEmpty, "the new link never hears of the old request")
        // The new link's own request with the same ID is answered on the new link.
        let again = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(), from: .gateway(generation: 2, requestID: "g1")), now: t0 + 0.4, wall: wall)
        let answered = core.on(.received(result(for: try #require(Self.invokeSent(again))), from: 1), now: t0 + 0.5, wall: wall)
        #expect(Self.answers(answered).map(\.0) == [.gateway(generation: 2, requestID: "g1")])
    }

    /// Bug: `pingAll` awaited each send, so one peer that never read stalled everyone's pings.
    /// The core hands every ping out in one step; the driver writes each without waiting.
    @Test func pingsGoToEveryConnectionInOneStep() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        let other = X25519.KeyPair.generate()
        _ = core.on(
            .opened(
                .init(
                    id: 2, handshake: .init(remoteStaticKey: other.publicKey, handshakeHash: [], version: 1, handshake: .xx),
                    address: "10.0.0.9", peer: "10.0.0.9:1", slot: 1)), now: t0, wall: wall)
        let pings = core.on(.pingAll)
        #expect(Set(pings.compactMap { if case let .send(id, message) = $0, message is Ping { id } else { nil } }) == [1, 2])
    }

    @Test func idempotentRetriesShareOneRun() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        let first = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(key: "k"), from: .gateway(generation: 1, requestID: "a")), now: t0, wall: wall)
        let operatorsOwn = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(key: "k"), from: .control(9)), now: t0, wall: wall)
        #expect(Self.invokeSent(operatorsOwn) != nil, "keys are per origin: the operator's runs on its own")
        let gatewayRetry = core.on(.request(method: ControlMethod.nodeInvoke.name, params: invoke(key: "k"), from: .gateway(generation: 1, requestID: "b")), now: t0, wall: wall)
        #expect(Self.invokeSent(gatewayRetry) == nil, "the retry waits for the first run")
        let done = core.on(.received(result(for: try #require(Self.invokeSent(first))), from: 1), now: t0 + 0.1, wall: wall)
        #expect(Set(Self.answers(done).map(\.0)) == [.gateway(generation: 1, requestID: "a"), .gateway(generation: 1, requestID: "b")])
    }

    @Test func theGatewayHearsAboutNothingWhileItsLinkIsDown() throws {
        var core = try core(gatewayUp: false)
        #expect(core.on(.opened(opening(1)), now: t0, wall: wall).allSatisfy { if case .toGateway = $0 { false } else { true } })
        let call = Array("{\"type\":\"gateway.call\",\"id\":\"c1\",\"method\":\"system-event\",\"params\":{}}".utf8)
        let refused = Self.sent(core.on(.received(call, from: 1), now: t0, wall: wall), to: 1).compactMap { $0 as? GatewayCallResult }
        #expect(refused.first?.error?.code == ErrorMessage.unavailable)
    }

    @Test func aNodesCallToTheGatewayTimesOut() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        let call = Array("{\"type\":\"gateway.call\",\"id\":\"c1\",\"method\":\"system-event\",\"params\":{\"text\":\"hi\"}}".utf8)
        let forwarded = core.on(.received(call, from: 1), now: t0, wall: wall)
        #expect(
            forwarded.contains { if case let .toGateway(1, .request(_, method, params)) = $0 { method == "system-event" && params?["nodeId"] == .string(nodeId) } else { false } })
        let expired = core.on(.timerFired, now: t0 + BridgeCore.callTimeout)
        #expect(Self.sent(expired, to: 1).compactMap { $0 as? GatewayCallResult }.first?.error?.code == ErrorMessage.timeout)
    }

    /// lastSeen is written an interval after the first tick, then every interval: not at the
    /// first tick, amid the reconnect storm that follows a restart (issue 53 §4).
    @Test func lastSeenIsFirstWrittenAnIntervalAfterStart() throws {
        var core = try core()
        func writesSeen(_ actions: [BridgeAction]) -> Bool {
            actions.contains { if case let .updateStore(operation) = $0, case .recordSeen = operation.change { true } else { false } }
        }
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        #expect(!writesSeen(core.on(.tick, now: t0 + 1, wall: wall)), "not at the first tick")
        #expect(!writesSeen(core.on(.tick, now: t0 + BridgeCore.seenInterval, wall: wall)))
        #expect(writesSeen(core.on(.tick, now: t0 + 1 + BridgeCore.seenInterval, wall: wall)), "an interval after it")
        _ = core.on(.opened(opening(2)), now: t0 + 2 + BridgeCore.seenInterval, wall: wall)
        #expect(!writesSeen(core.on(.tick, now: t0 + 2 + BridgeCore.seenInterval, wall: wall)))
        #expect(writesSeen(core.on(.tick, now: t0 + 1 + 2 * BridgeCore.seenInterval, wall: wall)), "and every interval")
    }

    /// State changes are announced within the node's rate, on the monotonic clock; the rest are
    /// coalesced and the state it ends in is announced on the next tick.
    @Test func stateChangesAreCoalescedOnTheFakeClock() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        var announced: [String] = []
        for i in 0..<41 {  // false, true, …, false: the bucket's worth announced ends on true
            let state = Array("{\"type\":\"state\",\"foreground\":\(i % 2 == 1)}".utf8)
            announced += Self.events(core.on(.received(state, from: 1), now: t0, wall: wall))
        }
        #expect(announced.count == BridgeSettings().limits[.statesPerMinute] / 5, "a bucket's worth, then coalesced")
        #expect(announced.last == "foreground" && core.connections[1]?.foreground == false)
        #expect(Self.events(core.on(.tick, now: t0 + 1, wall: wall)) == ["background"], "the state it ends in, at the next tick")
        #expect(Self.events(core.on(.tick, now: t0 + 2, wall: wall)) == [], "and only once")
    }
}

// MARK: - The invoke gate

struct InvokeGateTests {
    let t0 = Moment(seconds: 50)
    let node: PairedNode

    init() throws {
        var state = PairingState()
        let details = NodeDetails(
            displayName: "Tab", platform: "android", osVersion: "15", appVersion: "1", deviceModel: "x",
            caps: ["camera"], commands: ["camera.snap", "device.info", "screen.tap"], flags: .init(requiresForeground: true))
        let request = try state.requestPairing(key: PublicKey(bytes: X25519.KeyPair.generate().publicKey)!, details: details, source: nil, now: Date())
        state.setCode("1", requestId: request.requestId)
        node = try state.approve(requestId: request.requestId, code: "1", access: AccessRules(allow: ["camera.*", "device.info", "screen.tap"]), now: Date())
    }

    func decide(
        _ command: String, timeoutMs: Int? = nil, found: Bool = true, session: InvokeGate.Session? = .init(connection: 1, foreground: true, inFlight: 0),
        gate: InvokeGate = InvokeGate(settings: BridgeSettings()), buckets: inout RateBuckets
    ) -> InvokeGate.Verdict {
        let lookup: Result<PairedNode, any Error> = found ? .success(node) : .failure(PairingError.unknownNode("x"))
        return gate.decide(InvokeRequest(node: "x", command: command, timeoutMs: timeoutMs), node: lookup, rules: nil, session: session, buckets: &buckets, now: t0)
    }

    func code(_ verdict: InvokeGate.Verdict) -> String? {
        if case let .refuse(error, _) = verdict { error.code } else { nil }
    }

    @Test func everyRowOfTheTable() {
        var b = RateBuckets()
        #expect(code(decide("camera.*", buckets: &b)) == ErrorMessage.invalidRequest)
        #expect(code(decide("Bad Name", buckets: &b)) == ErrorMessage.invalidRequest)
        #expect(code(decide("device.info", timeoutMs: 0, buckets: &b)) == ErrorMessage.invalidRequest)
        #expect(code(decide("device.info", found: false, buckets: &b)) == ErrorMessage.nodeNotFound)
        #expect(code(decide("sms.send", buckets: &b)) == ErrorMessage.forbidden)
        #expect(code(decide("camera.clip", buckets: &b)) == ErrorMessage.forbidden, "allowlisted, not declared")
        #expect(code(decide("screen.tap", buckets: &b)) == ErrorMessage.forbidden, "the node cannot inject input")
        #expect(code(decide("sms.send", session: nil, buckets: &b)) == ErrorMessage.forbidden, "rules before connectedness")
        #expect(code(decide("device.info", session: nil, buckets: &b)) == ErrorMessage.nodeNotConnected)
        #expect(code(decide("camera.snap", session: .init(connection: 1, foreground: false, inFlight: 0), buckets: &b)) == ErrorMessage.backgroundUnavailable)
        #expect(code(decide("device.info", session: .init(connection: 1, foreground: false, inFlight: 0), buckets: &b)) == nil)
        #expect(code(decide("device.info", session: .init(connection: 1, foreground: true, inFlight: 8), buckets: &b)) == ErrorMessage.rateLimited)
        #expect(
            code(decide("device.info", session: .init(connection: 1, foreground: true, inFlight: 0, backlogged: true), buckets: &b)) == ErrorMessage.nodeBacklogged)
        #expect(code(decide("device.info", buckets: &b)) == nil)
    }

    /// Issue 48 §2: the URL policy checks strings; a url of any other type is refused before
    /// the node sees it (a JavaScript node turns `["http://192.168.1.1/"]` into that URL).
    @Test(
        arguments: Array<JSONValue>([
            ["url": ["http://192.168.1.1/"]], ["url": ["href": "http://192.168.1.1/"]], ["url": 3232235777], ["url": .null],
            ["http://192.168.1.1/"], "http://192.168.1.1/", ["url": "http://192.168.1.1/"],
        ]))
    func aNavigationURLThatIsNotAnAllowedStringIsRefused(params: JSONValue) throws {
        var state = PairingState()
        let details = NodeDetails(displayName: "Tab", platform: "android", appVersion: "1", caps: ["canvas"], commands: ["canvas.navigate", "canvas.present"])
        let request = try state.requestPairing(key: PublicKey(bytes: X25519.KeyPair.generate().publicKey)!, details: details, source: nil, now: Date())
        state.setCode("1", requestId: request.requestId)
        let canvasNode = try state.approve(requestId: request.requestId, code: "1", access: AccessRules(allow: ["canvas.*"]), now: Date())
        var b = RateBuckets()
        for command in InvokeGate.navigations {
            let verdict = InvokeGate(settings: BridgeSettings()).decide(
                InvokeRequest(node: "x", command: command, params: params), node: .success(canvasNode),
                rules: nil, session: .init(connection: 1, foreground: true, inFlight: 0), buckets: &b, now: t0)
            guard case let .refuse(error, denied) = verdict else { Issue.record("\(command) \(params) was relayed"); continue }
            #expect(error.code == ErrorMessage.forbidden && error.details?["reason"] == "CANVAS_URL" && denied != nil, "\(error)")
        }
        // A string the policy allows still passes, and params without a url are the node's business.
        let allowedParams: [JSONValue] = [["url": "https://example.com/"], ["other": 1], .null]
        for allowed in allowedParams {
            let verdict = InvokeGate(settings: BridgeSettings()).decide(
                InvokeRequest(node: "x", command: "canvas.navigate", params: allowed), node: .success(canvasNode),
                rules: nil, session: .init(connection: 1, foreground: true, inFlight: 0), buckets: &b, now: t0)
            #expect(code(verdict) == nil, "\(allowed)")
        }
    }

    @Test func snapshotsAreRateLimitedAndARefusalSpendsNoToken() {
        var b = RateBuckets()
        let limits = BridgeSettings().limits
        let allowance = max(1, limits[.snapshotsPerMinute] / 5)
        // Refused for concurrency: no token spent.
        for _ in 0..<50 { _ = decide("camera.snap", session: .init(connection: 1, foreground: true, inFlight: 8), buckets: &b) }
        for _ in 0..<allowance { #expect(code(decide("camera.snap", buckets: &b)) == nil) }
        guard case let .refuse(error, _) = decide("camera.snap", buckets: &b) else { Issue.record("not limited"); return }
        #expect(error.code == ErrorMessage.rateLimited && error.retryAfterMs ?? 0 > 0)
    }

    /// Issue 50 §5: a deny rule is named, with the line that takes it out, not "not in the allowlist".
    @Test func aCommandADenyRuleBlocksNamesTheRule() throws {
        var state = PairingState()
        let details = NodeDetails(displayName: "Tab", platform: "android", appVersion: "1", caps: ["canvas"], commands: ["canvas.eval", "canvas.hide"])
        let request = try state.requestPairing(key: PublicKey(bytes: X25519.KeyPair.generate().publicKey)!, details: details, source: nil, now: Date())
        state.setCode("1", requestId: request.requestId)
        let node = try state.approve(requestId: request.requestId, code: "1", access: AccessRules(allow: ["canvas.*"], deny: ["canvas.eval"]), now: Date())
        var b = RateBuckets()
        let verdict = InvokeGate(settings: BridgeSettings()).decide(
            InvokeRequest(node: "x", command: "canvas.eval"), node: .success(node), rules: nil,
            session: .init(connection: 1, foreground: true, inFlight: 0), buckets: &b, now: t0)
        guard case let .refuse(error, denied) = verdict else {
            Issue.record("allowed")
            return
        }
        #expect(denied == .deniedByRule("canvas.eval"))
        #expect(error.message.contains("deny rule canvas.eval") && !error.message.contains("allowlist"), "\(error.message)")
        #expect(error.details?["reason"] == "NOT_ALLOWLISTED" && error.details?["denyRule"] == "canvas.eval")
        #expect(error.details?["hint"]?.stringValue == "lanbridge nodes deny \(node.nodeId) canvas.eval --remove")
    }

    @Test func deniedCommandsAreMarkedForTheAudit() {
        var b = RateBuckets()
        guard case let .refuse(_, denied) = decide("sms.send", buckets: &b) else { Issue.record("allowed"); return }
        #expect(denied == .notAllowlisted)
    }
}

extension Result where Success == InvokePayload, Failure == ErrorMessage {
    var failureCode: String? { if case let .failure(error) = self { error.code } else { nil } }
}

extension BridgeCoreTests {
    /// 983,394 lines in 10 s came from one node answering invokes that did not exist.
    @Test func resultsForNoInvokeAreLoggedOnceAMinuteWithACount() throws {
        var core = try core()
        core.logger.level = .trace
        // The core's lines leave as `.log` actions (issue 39): what the driver would log.
        var lines: [String] = []
        func keep(_ actions: [BridgeAction]) {
            for case let .log(records) in actions { lines += records.map { "\($0.message)" } }
        }
        keep(core.on(.opened(opening(1)), now: t0, wall: wall))
        for n in 0..<1000 {
            keep(core.on(.received(Array("{\"type\":\"invoke.result\",\"id\":\"nope\(n)\",\"ok\":true,\"payload\":{}}".utf8), from: 1), now: t0 + Double(n) / 100, wall: wall))
        }
        let dropped = lines.filter { $0.contains("dropped") }
        #expect(dropped.count == 1, "the first is logged, the rest counted: \(dropped.count) lines")
        keep(core.on(.tick, now: t0 + 61, wall: wall))
        let summary = lines.filter { $0.contains("dropped 999 more results") }
        #expect(summary.count == 1, "\(lines.suffix(3))")
    }
}
