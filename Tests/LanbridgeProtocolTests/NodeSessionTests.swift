import Foundation
import LanbridgeProtocol
import TestSupport
import Testing

/// The node's side of a connection (issue 39), alone: events in, actions out, on a fake clock.
/// No transport, no FakeBridge.
struct NodeSessionTests {
    let t0 = Moment(seconds: 100)
    let details = NodeDetails(displayName: "phone", platform: "ios")
    let hash = [UInt8](repeating: 7, count: 32)
    let nonce = [UInt8](repeating: 9, count: VerificationCode.nonceLength)
    let bridgeNode = Fingerprint(publicKey: [UInt8](repeating: 1, count: 32))

    func session(pinned: Bool = false, invite: [UInt8]? = nil, foreground: Bool = true) -> NodeSession {
        NodeSession(.init(details: details, handshakeHash: hash, pinned: pinned, inviteSecret: invite, nodeNonce: nonce, foreground: foreground))
    }

    /// A session already paired and connected (the welcome of a known node).
    func connected() -> NodeSession {
        var s = session(pinned: true)
        var welcome = Welcome(bridgeName: "desk", paired: true, nodeId: bridgeNode)
        welcome.addresses = ["192.0.2.1:18790"]
        _ = s.handle(.received(welcome), now: t0)
        return s
    }

    func sent(_ actions: [NodeSession.Action]) -> [String] {
        actions.compactMap { if case let .send(message) = $0 { type(of: message).type } else { nil } }
    }

    @Test func pairingByCodeCommitsRevealsShowsTheCodeOnlyOnceRecordedThenConnects() throws {
        var s = session()
        let request = s.handle(.received(Welcome(bridgeName: "desk", paired: false, nodeId: bridgeNode)), now: t0)
        guard case let .send(message as PairRequest) = try #require(request.first) else { Issue.record("no pair.request: \(request)"); return }
        #expect(message.commitment == Hex.encode(VerificationCode.commitment(handshakeHash: hash, nodeNonce: nonce)))
        #expect(s.phase == .requestingPairing)

        let bridgeNonce = [UInt8](repeating: 3, count: 32)
        let reveal = s.handle(.received(PairChallenge(requestId: "r1", nonce: Hex.encode(bridgeNonce), expiresAt: .distantFuture)), now: t0)
        #expect(sent(reveal) == ["pair.reveal"])
        let code = VerificationCode.code(handshakeHash: hash, nodeNonce: nonce, bridgeNonce: bridgeNonce)
        #expect(s.phase == .revealed(code: code))
        #expect(!reveal.contains { if case .notify = $0 { true } else { false } }, "no code before the bridge recorded it")

        let pending = s.handle(.received(PairPending(requestId: "r1", expiresAt: .distantFuture)), now: t0)
        guard case let .notify(.verificationCode(shown, requestId)) = try #require(pending.first) else { Issue.record("\(pending)"); return }
        #expect(shown == code && requestId == "r1")

        let approved = s.handle(.received(PairResolved(outcome: .approved, nodeId: bridgeNode)), now: t0)
        #expect(s.isConnected)
        guard approved.count == 4, case .authorize = approved[0], case .pin(bridgeName: "desk", addresses: nil) = approved[1],
            case let .send(state as AppState) = approved[2], case .notify(.connected(bridgeName: "desk")) = approved[3]
        else {
            Issue.record("authorize, pin, app state, connected: \(approved)"); return
        }
        #expect(state.foreground)
    }

    @Test func anInviteIsRedeemedAndARejectionOrExpiryEndsTheSession() {
        var s = session(invite: [UInt8](repeating: 5, count: 16))
        #expect(sent(s.handle(.received(Welcome(bridgeName: "desk", paired: false, nodeId: bridgeNode)), now: t0)) == ["invite.redeem"])
        let refused = s.handle(.received(ErrorMessage(code: ErrorMessage.pairingFailed, message: "used invite")), now: t0)
        guard case .end(.inviteRefused("used invite")) = refused.last else { Issue.record("\(refused)"); return }
        #expect(s.phase == .ended)

        for (outcome, failure) in [(PairResolved.Outcome.rejected, NodeSession.Failure.rejected), (.expired, .expired)] {
            var s = session()
            _ = s.handle(.received(Welcome(bridgeName: "desk", paired: false, nodeId: bridgeNode)), now: t0)
            guard case let .end(got) = s.handle(.received(PairResolved(outcome: outcome, nodeId: bridgeNode)), now: t0).last else { Issue.record("no end"); continue }
            #expect(got == failure)
        }
    }

    @Test func aPinnedNodeTheBridgeNoLongerKnowsIsRevoked() {
        var s = session(pinned: true)
        let actions = s.handle(.received(Welcome(bridgeName: "desk", paired: false, nodeId: bridgeNode)), now: t0)
        guard case .end(.revoked) = actions.last else { Issue.record("\(actions)"); return }
        var c = connected()
        guard case .end(.revoked) = c.handle(.received(Revoked(nodeId: bridgeNode)), now: t0).last else { Issue.record("revoked message"); return }
    }

    /// A bridge still pairing (its code not yet confirmed by anyone) runs nothing on the node.
    @Test func anInvokeBeforeThePairingIsResolvedRunsNothing() {
        var s = session()
        _ = s.handle(.received(Welcome(bridgeName: "desk", paired: false, nodeId: bridgeNode)), now: t0)
        #expect(s.handle(.received(Invoke(id: "1", command: "camera.snap")), now: t0).isEmpty)
        #expect(s.handle(.received(CanvasGrant(id: "", canvas: CanvasAccess(url: "https://x", tlsSha256: "ab", expiresAtMs: 1))), now: t0).isEmpty)
    }

    @Test func aResultAfterACancelIsNotSentAndARepeatedIDGetsARunOfItsOwn() {
        var s = connected()
        guard case let .startHandler(first, _) = s.handle(.received(Invoke(id: "a", command: "x")), now: t0).first,
            case let .startHandler(second, _) = s.handle(.received(Invoke(id: "a", command: "x")), now: t0).first
        else {
            Issue.record("no runs"); return
        }
        #expect(first != second)
        let cancels = s.handle(.received(InvokeCancel(id: "a")), now: t0)
        #expect(cancels.count == 2 && s.runningKeys.isEmpty)
        #expect(s.handle(.handlerFinished(key: first, InvokeResult(id: "a", payload: [:])), now: t0).isEmpty, "cancelled: nobody waits")

        guard case let .startHandler(third, _) = s.handle(.received(Invoke(id: "b", command: "x")), now: t0).first else { return }
        #expect(sent(s.handle(.handlerFinished(key: third, InvokeResult(id: "b", payload: [:])), now: t0)) == ["invoke.result"])
        #expect(s.handle(.handlerFinished(key: third, InvokeResult(id: "b", payload: [:])), now: t0).isEmpty, "answered once")
    }

    @Test func requestsTimeOutOnTheClockAndALateAnswerIsDropped() {
        var s = connected()
        #expect(sent(s.handle(.request(id: "c1", message: GatewayCall(id: "c1", method: "agent"), deadline: t0 + 5, timeoutText: "5 seconds"), now: t0)) == ["gateway.call"])
        #expect(s.nextDeadline == t0 + 5)
        #expect(s.handle(.tick, now: t0 + 4.9).isEmpty)
        let expired = s.handle(.tick, now: t0 + 5)
        guard case let .answer("c1", .failure(error)) = expired.first else { Issue.record("\(expired)"); return }
        #expect(error.code == ErrorMessage.timeout && error.message == "no answer within 5 seconds")
        #expect(s.nextDeadline == nil)
        #expect(s.handle(.received(GatewayCallResult(id: "c1", result: .success(nil))), now: t0 + 6).isEmpty)
    }

    @Test func aRequestWhileNotConnectedIsAnsweredUnavailableAndNothingIsSent() {
        var s = session()
        let actions = s.handle(.request(id: "p1", message: PushRegister(id: "p1", provider: "apns", token: "t"), deadline: t0 + 30, timeoutText: "30"), now: t0)
        guard actions.count == 1, case let .answer("p1", .failure(error)) = actions[0] else { Issue.record("\(actions)"); return }
        #expect(error.code == ErrorMessage.unavailable)
    }

    /// The connection's end: every run cancelled, every request answered once, and nothing after.
    @Test func theCloseCancelsAnswersAndAWelcomeAfterItIsIgnored() {
        var s = connected()
        _ = s.handle(.received(Invoke(id: "a", command: "x")), now: t0)
        _ = s.handle(.request(id: "c1", message: GatewayCall(id: "c1", method: "agent"), deadline: t0 + 30, timeoutText: "30"), now: t0)
        let closed = s.handle(.closed, now: t0)
        #expect(closed.count == 2)
        guard case .cancelHandler = closed[0], case .answer("c1", .failure) = closed[1] else { Issue.record("\(closed)"); return }
        #expect(s.handle(.received(Welcome(bridgeName: "desk", paired: true, nodeId: bridgeNode)), now: t0).isEmpty)
        #expect(s.handle(.received(Ping(id: 1)), now: t0).isEmpty)
        #expect(s.handle(.closed, now: t0).isEmpty)
    }

    /// The bridge restarting mid-pairing: the session ends without a failure (the client dials
    /// again), and a new session starts from the welcome with no state of the old one.
    @Test func aReconnectDuringPairingStartsAfresh() {
        var s = session()
        _ = s.handle(.received(Welcome(bridgeName: "desk", paired: false, nodeId: bridgeNode)), now: t0)
        _ = s.handle(.received(PairChallenge(requestId: "r1", nonce: Hex.encode([UInt8](repeating: 3, count: 32)), expiresAt: .distantFuture)), now: t0)
        let closed = s.handle(.closed, now: t0)
        #expect(!closed.contains { if case .end = $0 { true } else { false } })
        var again = session()
        #expect(sent(again.handle(.received(Welcome(bridgeName: "desk", paired: false, nodeId: bridgeNode)), now: t0)) == ["pair.request"])
        #expect(again.handle(.received(PairPending(requestId: "r1", expiresAt: .distantFuture)), now: t0).isEmpty, "no code before this session's challenge")
    }

    @Test func pingsAreAnsweredInAnyPhaseAndTheAppStateOnlyWhenConnected() {
        var s = session()
        #expect(sent(s.handle(.received(Ping(id: 1)), now: t0)) == ["pong"])
        #expect(s.handle(.foreground(false), now: t0).isEmpty)
        #expect(s.handle(.appEvent(NodeEvent(event: "e")), now: t0).isEmpty)
        var c = connected()
        guard case let .send(state as AppState) = c.handle(.foreground(false), now: t0).first else { Issue.record("no app state"); return }
        #expect(!state.foreground)
        #expect(sent(c.handle(.appEvent(NodeEvent(event: "e")), now: t0)) == ["event"])
        let replaced = c.handle(.received(ErrorMessage(code: ErrorMessage.replaced, message: "another")), now: t0)
        guard case .end(.replaced) = replaced.last else { Issue.record("\(replaced)"); return }
    }
}

/// pairing/vectors/node-session.json: the walks the Python SDK's session replays too.
struct NodeSessionWalkTests {
    struct File: Decodable { let walks: [Walk] }
    struct Walk: Decodable {
        let name: String
        let setup: [String: Bool]
        let steps: [JSONValue]
    }

    static func summary(_ action: NodeSession.Action, runs: [Int: String]) -> String {
        switch action {
        case let .send(message): "send \(type(of: message).type)"
        case .authorize: "authorize"
        case let .pin(name, _): "pin \(name)"
        case let .startHandler(_, invoke): "start \(invoke.id)"
        case let .cancelHandler(key): "cancel \(runs[key] ?? "?")"
        case let .answer(id, .success): "answer \(id) ok"
        case let .answer(id, .failure(error)): "answer \(id) \(error.code)"
        case .canvas: "canvas"
        case let .notify(.verificationCode(_, requestId)): "notify code \(requestId)"
        case let .notify(.pairingPending(requestId)): "notify pending \(requestId)"
        case let .notify(.connected(name)): "notify connected \(name)"
        case let .notify(.bridgeError(code, _)): "notify error \(code)"
        case let .end(failure):
            switch failure {
            case .revoked: "end revoked"
            case .rejected: "end rejected"
            case .expired: "end expired"
            case .replaced: "end replaced"
            case .inviteRefused: "end invite-refused"
            }
        }
    }

    static func state(_ phase: NodeSession.Phase) -> String {
        switch phase {
        case .awaitingWelcome: "awaiting-welcome"
        case .redeemingInvite: "redeeming-invite"
        case .requestingPairing: "requesting-pairing"
        case .revealed: "revealed"
        case .pending: "pending"
        case .connected: "connected"
        case .ended: "ended"
        }
    }

    static func message(_ value: JSONValue?) throws -> any SessionMessage {
        try SessionMessages.decode(try #require(value).serialized)
    }

    @Test func everyWalkGoesAsTheTableSays() throws {
        let file = try Repository.json(File.self, at: "pairing/vectors/node-session.json")
        #expect(file.walks.count >= 8)
        let t0 = Moment(seconds: 1000)
        for walk in file.walks {
            var session = NodeSession(
                .init(
                    details: NodeDetails(displayName: "phone", platform: "ios"), handshakeHash: [UInt8](repeating: 7, count: 32),
                    pinned: walk.setup["pinned"] == true, inviteSecret: walk.setup["invite"] == true ? [UInt8](repeating: 5, count: 16) : nil,
                    nodeNonce: [UInt8](repeating: 9, count: VerificationCode.nonceLength), foreground: walk.setup["foreground"] == true))
            var runs: [Int: String] = [:]  // run key -> invoke ID
            var started: [Int] = []  // keys in the order they started
            for (index, step) in walk.steps.enumerated() {
                let now = t0 + (step["at"]?.numberValue ?? 0)
                let event: NodeSession.Event
                if let received = step["receive"] {
                    event = .received(try Self.message(received))
                } else if let n = step["finished"]?.numberValue {
                    let key = started[Int(n) - 1]
                    event = .handlerFinished(key: key, InvokeResult(id: runs[key] ?? "?", payload: [:]))
                } else if let request = step["request"] {
                    event = .request(
                        id: request["id"]?.stringValue ?? "", message: try Self.message(request),
                        deadline: now + (step["deadline"]?.numberValue ?? 0), timeoutText: "the deadline")
                } else if case let .bool(foreground)? = step["foreground"] {
                    event = .foreground(foreground)
                } else if let name = step["event"]?.stringValue {
                    event = .appEvent(NodeEvent(event: name))
                } else if step["tick"] != nil {
                    event = .tick
                } else {
                    event = .closed
                }
                let actions = session.handle(event, now: now)
                for case let .startHandler(key, invoke) in actions {
                    runs[key] = invoke.id
                    started.append(key)
                }
                let expected: [String] = if case let .array(items)? = step["do"] { items.compactMap(\.stringValue) } else { [] }
                #expect(actions.map { Self.summary($0, runs: runs) } == expected, "\(walk.name), step \(index + 1)")
                #expect(Self.state(session.phase) == step["state"]?.stringValue, "\(walk.name), step \(index + 1)")
            }
        }
    }
}
