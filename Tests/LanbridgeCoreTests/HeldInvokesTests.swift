import Foundation
@testable import LanbridgeCore
import LanbridgeCrypto
@testable import LanbridgeProtocol
@testable import LanbridgeState
import Testing

/// `node.invoke` with `hold` (issue 25): it waits for the node's foreground or return, runs in
/// order, expires with `held: true`, is bounded, joins an idempotent retry, is dropped with its
/// gateway link and fails at once when the node is revoked. The core alone, with a fake clock.
extension BridgeCoreTests {
    func held(_ command: String = "camera.snap", maxMs: Int = 5000, key: String = UUID().uuidString, params: JSONValue? = nil) -> JSONValue {
        var request = invoke(command, key: key)
        if case var .object(fields) = request {
            fields["hold"] = ["maxMs": .number(Double(maxMs))]
            if let params { fields["params"] = params }
            request = .object(fields)
        }
        return request
    }

    func state(_ foreground: Bool) -> [UInt8] { Array("{\"type\":\"state\",\"foreground\":\(foreground)}".utf8) }

    /// The node connects (connection 1) and says it is in the background.
    func connectInBackground(_ core: inout BridgeCore) {
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        _ = core.on(.received(state(false), from: 1), now: t0, wall: wall)
    }

    func ask(_ core: inout BridgeCore, _ params: JSONValue, id: String, at now: Moment) -> [BridgeAction] {
        core.on(.request(method: ControlMethod.nodeInvoke.name, params: params, from: .gateway(generation: 1, requestID: id)), now: now, wall: wall)
    }

    static func failure(_ actions: [BridgeAction]) -> ErrorMessage? {
        answers(actions).compactMap { if case let .failure(error) = $0.1 { error } else { nil } }.first
    }

    @Test func aHeldInvokeRunsWhenTheNodeComesToTheFront() throws {
        var core = try core()
        connectInBackground(&core)
        let asked = ask(&core, held(), id: "g1", at: t0)
        #expect(Self.answers(asked).isEmpty && Self.invokeSent(asked) == nil, "held: neither answered nor sent")
        let front = core.on(.received(state(true), from: 1), now: t0 + 2, wall: wall)
        let sent = try #require(Self.invokeSent(front))
        #expect(sent.command == "camera.snap")
        let done = core.on(.received(result(for: sent), from: 1), now: t0 + 3, wall: wall)
        guard case .success? = Self.answers(done).first?.1 else { Issue.record("expected the node's result, got \(done)"); return }
        // Without hold, the fast-fail is as before.
        _ = core.on(.received(state(false), from: 1), now: t0 + 4, wall: wall)
        #expect(Self.failure(ask(&core, invoke("camera.snap"), id: "g2", at: t0 + 4))?.code == ErrorMessage.backgroundUnavailable)
    }

    @Test func aHeldInvokeForADisconnectedNodeRunsWhenItReconnectsInOrder() throws {
        var core = try core()
        for n in 0..<3 { _ = ask(&core, held("device.info", params: ["n": .number(Double(n))]), id: "g\(n)", at: t0) }
        let opened = core.on(.opened(opening(1)), now: t0 + 1, wall: wall)
        #expect(Self.invokeSent(opened) == nil, "delivered once the node says where it is, not before")
        let delivered = Self.sent(core.on(.received(state(true), from: 1), now: t0 + 1, wall: wall), to: 1).compactMap { $0 as? Invoke }
        #expect(delivered.map { $0.params?["n"] } == [0, 1, 2], "in the order they were asked")
    }

    @Test func aHeldInvokeThatExpiresSaysItWasHeldAndHowLong() throws {
        var core = try core()
        connectInBackground(&core)
        _ = ask(&core, held(maxMs: 5000), id: "g1", at: t0)
        #expect(Self.answers(core.on(.timerFired, now: t0 + 4)).isEmpty)
        let error = try #require(Self.failure(core.on(.timerFired, now: t0 + 5)))
        #expect(error.code == ErrorMessage.backgroundUnavailable && error.retryable == true)
        #expect(error.details?["held"] == true && error.details?["waitedMs"] == 5000)
        // The words say it too: an expired hold does not read like an immediate refusal (issue 50 §5).
        #expect(error.message.hasSuffix("; held 5s, it did not come back in time"), "\(error.message)")
        // And it is gone: coming to the front runs nothing.
        #expect(Self.invokeSent(core.on(.received(state(true), from: 1), now: t0 + 6, wall: wall)) == nil)
    }

    @Test func pastABoundTheNewestIsRefusedAndTheOthersStay() throws {
        var core = try core()
        var settings = BridgeSettings()
        settings.limits[.heldPerNode] = 2
        _ = core.on(.reload(settings))
        _ = ask(&core, held("device.info"), id: "g1", at: t0)
        _ = ask(&core, held("device.info"), id: "g2", at: t0)
        let third = try #require(Self.failure(ask(&core, held("device.info"), id: "g3", at: t0)))
        #expect(third.code == ErrorMessage.holdLimit && third.retryable == true)
        #expect(core.book.held.count == 2)
        settings.limits[.maxHoldMs] = 1000
        _ = core.on(.reload(settings))
        #expect(Self.failure(ask(&core, held("device.info", maxMs: 2000), id: "g4", at: t0))?.code == ErrorMessage.invalidRequest)
    }

    @Test func anIdempotentRetryJoinsTheHeldInvoke() throws {
        var core = try core()
        _ = ask(&core, held("device.info", key: "same"), id: "g1", at: t0)
        _ = ask(&core, held("device.info", key: "same"), id: "g2", at: t0 + 1)
        #expect(core.book.held.count == 1, "the retry waits on the first, it is not held twice")
        _ = core.on(.opened(opening(1)), now: t0 + 2, wall: wall)
        let sent = Self.sent(core.on(.received(state(true), from: 1), now: t0 + 2, wall: wall), to: 1).compactMap { $0 as? Invoke }
        #expect(sent.count == 1)
        let done = core.on(.received(result(for: try #require(sent.first)), from: 1), now: t0 + 3, wall: wall)
        #expect(Set(Self.answers(done).map(\.0)) == [.gateway(generation: 1, requestID: "g1"), .gateway(generation: 1, requestID: "g2")])
    }

    @Test func aDroppedGatewayLinkDropsItsHeldInvokes() throws {
        var core = try core()
        _ = ask(&core, held("device.info"), id: "g1", at: t0)
        _ = core.on(.gatewayDown(generation: 1), now: t0 + 1)
        #expect(core.book.held.isEmpty)
        _ = core.on(.opened(opening(1)), now: t0 + 2, wall: wall)
        #expect(Self.invokeSent(core.on(.received(state(true), from: 1), now: t0 + 2, wall: wall)) == nil, "nobody is left to answer")
    }

    @Test func aRevokedNodesHeldInvokesFailAtOnce() throws {
        var core = try core()
        _ = ask(&core, held("device.info"), id: "g1", at: t0)
        var state = core.lastState
        _ = try state.revoke(matching: nodeId, now: wall)
        let error = try #require(Self.failure(core.on(.storeChanged(state, version: "v2"), now: t0 + 1)))
        #expect(error.code == ErrorMessage.nodeNotFound && core.book.held.isEmpty)
    }
}

/// The wake hook (issue 25): the core asks for it when it holds an invoke for a node that is away
/// or in the background, at most once per node per 30 s, and only when one is configured.
extension BridgeCoreTests {
    static func wakes(_ actions: [BridgeAction]) -> [WakeCall] {
        actions.compactMap { if case let .wake(call) = $0 { call } else { nil } }
    }

    func coreWithWakeHook() throws -> BridgeCore {
        var core = try core()
        var settings = BridgeSettings()
        settings.wake.exec = "/usr/local/lib/lanbridge/wake"
        _ = core.on(.reload(settings))
        return core
    }

    @Test func aHeldInvokeWakesItsNodeOncePerThirtySeconds() throws {
        var core = try coreWithWakeHook()
        connectInBackground(&core)
        let first = Self.wakes(ask(&core, held("camera.snap", maxMs: 60000), id: "g1", at: t0))
        let call = try #require(first.first)
        #expect(first.count == 1 && call.command == "camera.snap" && call.why == ErrorMessage.backgroundUnavailable && call.holdMs == 60000)
        #expect(call.node == core.paired.keys.first && call.displayName == "Ada's phone" && call.hook.exec == "/usr/local/lib/lanbridge/wake")
        #expect(Self.wakes(ask(&core, held("camera.snap", maxMs: 60000), id: "g2", at: t0 + 29)).isEmpty, "not again within 30 s")
        #expect(Self.wakes(ask(&core, held("camera.snap", maxMs: 60000), id: "g3", at: t0 + 30)).count == 1, "again after 30 s")
        // A node that is away is woken for any held command, and says so.
        _ = core.on(.closed(1), now: t0 + 31)
        #expect(Self.wakes(ask(&core, held("device.info"), id: "g4", at: t0 + 61)).first?.why == ErrorMessage.nodeNotConnected)
    }

    @Test func nothingIsWokenWithoutAHookOrWithoutHold() throws {
        var core = try core()
        connectInBackground(&core)
        #expect(Self.wakes(ask(&core, held(), id: "g1", at: t0)).isEmpty, "no wake.exec: no wake")
        var hooked = try coreWithWakeHook()
        connectInBackground(&hooked)
        #expect(Self.wakes(ask(&hooked, invoke("camera.snap"), id: "g1", at: t0)).isEmpty, "a fast-fail wakes nothing")
        #expect(
            Self.wakes(ask(&hooked, invoke("canvas.hide"), id: "g2", at: t0)).isEmpty && Self.wakes(ask(&hooked, held("device.info"), id: "g3", at: t0)).isEmpty,
            "a command that runs in the background is not held, and wakes nothing")
    }
}

extension BridgeCoreTests {
    @Test func anOperatorWhoLeavesTakesTheirHeldInvokesAlong() throws {
        var core = try core()
        connectInBackground(&core)
        _ = core.on(.request(method: ControlMethod.nodeInvoke.name, params: held(), from: .control(5)), now: t0, wall: wall)
        _ = ask(&core, held(), id: "g1", at: t0)
        let left = core.on(.controlLeft([5]), now: t0 + 1)
        #expect(Self.answers(left).map(\.0) == [.control(5)] && core.book.held.count == 1, "only the leaver's")
        let front = Self.sent(core.on(.received(state(true), from: 1), now: t0 + 2, wall: wall), to: 1).compactMap { $0 as? Invoke }
        #expect(front.count == 1, "the gateway's still runs, the operator's does not")
    }
}

/// Issue 36 §4: a cancel reaches held invokes too, by idempotency key and by request ID.
extension BridgeCoreTests {
    func cancelRequest(key: String? = nil, id: String? = nil) -> JSONValue {
        var fields: [String: JSONValue] = ["nodeId": .string(nodeId)]
        if let key { fields["idempotencyKey"] = .string(key) }
        if let id { fields["id"] = .string(id) }
        return .object(fields)
    }

    @Test(arguments: [true, false]) func aCancelRemovesAHeldInvokeAndItNeverRuns(byKey: Bool) throws {
        var core = try core()
        connectInBackground(&core)
        _ = ask(&core, held(key: "k-held"), id: "g1", at: t0)
        let cancelled = core.on(
            .request(
                method: ControlMethod.nodeInvokeCancel.name, params: byKey ? cancelRequest(key: "k-held") : cancelRequest(id: "g1"), from: .gateway(generation: 1, requestID: "c1")),
            now: t0 + 1, wall: wall)
        let answers = Self.answers(cancelled)
        #expect(
            answers.contains { target, result in
                if case let .gateway(_, id) = target, id == "g1", case let .failure(error) = result { return error.code == ErrorMessage.cancelled }
                return false
            }, "the held invoke's asker hears CANCELLED: \(answers)")
        #expect(
            answers.contains { target, result in
                if case let .gateway(_, id) = target, id == "c1", case let .success(.value(value?)) = result { return value["cancelled"] == true }
                return false
            }, "the cancel answers cancelled: true: \(answers)")
        let front = core.on(.received(state(true), from: 1), now: t0 + 2, wall: wall)
        #expect(Self.invokeSent(front) == nil, "a cancelled held invoke does not run when the node comes back")
    }
}

/// Issue 36 §2: a flooded daemon could not read the store after a revoke, and still relayed the
/// revoked node's next invoke. It fails closed now, and says which store it holds.
extension BridgeCoreTests {
    @Test func whileTheStoreCannotBeReadNothingRunsAndTheCLIIsToldSo() throws {
        var core = try core()
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        struct TooManyFiles: Error {}
        _ = core.on(.storeUnreadable(TooManyFiles()))
        let refused = Self.failure(ask(&core, invoke("device.info"), id: "g1", at: t0 + 1))
        #expect(refused?.code == ErrorMessage.unavailable && refused?.retryable == true, "\(String(describing: refused))")
        let applied = core.on(.request(method: ControlMethod.storeApplied.name, params: nil, from: .control(7)), now: t0 + 1, wall: wall)
        #expect(Self.failure(applied)?.message.contains("cannot read the pairing store") == true, "\(applied)")
        // Readable again: it runs, and the CLI hears the version.
        _ = core.on(.storeChanged(core.lastState, version: "v2"), now: t0 + 2)
        #expect(Self.invokeSent(ask(&core, invoke("device.info"), id: "g2", at: t0 + 2)) != nil)
        let version = Self.answers(core.on(.request(method: ControlMethod.storeApplied.name, params: nil, from: .control(8)), now: t0 + 2, wall: wall)).first?.1
        guard case let .success(.value(value?))? = version else { Issue.record("\(String(describing: version))"); return }
        #expect(value["version"] == "v2")
        // The gateway may not ask it.
        #expect(
            Self.failure(core.on(.request(method: ControlMethod.storeApplied.name, params: nil, from: .gateway(generation: 1, requestID: "x")), now: t0 + 2, wall: wall))?.code
                == ErrorMessage.unknownMethod)
    }
}

/// The sub-machine alone (issue 39 §2): events in, endings and verdicts out, on a fake clock,
/// without a core.
struct HeldInvokesMachineTests {
    let t0 = Moment(seconds: 1000)
    let base = BridgeCoreTests()

    func node() throws -> PairedNode { try #require(try base.core().lastState.paired.nodes.first) }

    func entry(_ command: String, asker: AnswerTarget, holdMs: Int = 5000, at now: Moment, bytes: Int = 10) throws -> HeldInvokes.Entry {
        var params = base.held(command, maxMs: holdMs)
        if case var .object(fields) = params { fields["nodeId"] = .string(base.nodeId); params = .object(fields) }
        let request = try InvokeRequest(params: params)
        return .init(
            request: request, origin: .gateway, waiter: .init(target: asker, slot: nil, command: command, started: now),
            expires: now + Double(holdMs) / 1000, bytes: bytes,
            refusal: ErrorMessage(code: ErrorMessage.backgroundUnavailable, message: "in the background", details: ["command": .string(command)], retryable: true))
    }

    @Test func boundsRefuseTheNewestAndKeepTheRest() throws {
        var held = HeldInvokes()
        held.limits = .init(perNode: 2, total: 10, bytes: 100)
        let node = try node()
        for n in 0..<2 { #expect(held.hold(try entry("camera.snap", asker: .control(n), at: t0), node: node, hook: .init(), now: t0) == .held(wake: nil)) }
        guard case let .refused(error) = held.hold(try entry("camera.snap", asker: .control(9), at: t0), node: node, hook: .init(), now: t0) else {
            Issue.record("a third for the node passes perNode 2"); return
        }
        #expect(error.code == ErrorMessage.holdLimit && error.retryable == true && error.details?["command"] == "camera.snap")
        #expect(held.count == 2 && held.bytes == 20)
        held.limits.perNode = 16
        guard case .refused = held.hold(try entry("camera.snap", asker: .control(10), at: t0, bytes: 81), node: node, hook: .init(), now: t0) else {
            Issue.record("100 bytes passed"); return
        }
    }

    @Test func expiryEndsOnlyWhatIsDueSayingHowLongItWaited() throws {
        var held = HeldInvokes()
        let node = try node()
        _ = held.hold(try entry("camera.snap", asker: .control(1), holdMs: 1000, at: t0), node: node, hook: .init(), now: t0)
        _ = held.hold(try entry("device.info", asker: .control(2), holdMs: 3000, at: t0), node: node, hook: .init(), now: t0)
        #expect(held.nextDeadline == t0 + 1)
        #expect(held.expire(now: t0 + 0.999).isEmpty)
        let ended = held.expire(now: t0 + 1.5)
        #expect(ended.map(\.waiter.target) == [.control(1)])
        #expect(
            ended.first?.error.code == ErrorMessage.backgroundUnavailable && ended.first?.error.details?["held"] == true
                && ended.first?.error.details?["waitedMs"] == 1500 && ended.first?.error.details?["command"] == "camera.snap")
        #expect(held.count == 1 && held.nextDeadline == t0 + 3)
    }

    @Test func eachLeavingAskerTakesOnlyItsOwn() throws {
        var held = HeldInvokes()
        let node = try node()
        for asker: AnswerTarget in [.control(1), .gateway(generation: 1, requestID: "a"), .gateway(generation: 2, requestID: "b"), .control(2)] {
            _ = held.hold(try entry("camera.snap", asker: asker, at: t0), node: node, hook: .init(), now: t0)
        }
        #expect(held.askersLeft([1]).map(\.waiter.target) == [.control(1)])
        let dropped = held.gatewayLeft(1)
        #expect(dropped.map(\.waiter.target) == [.gateway(generation: 1, requestID: "a")] && dropped.first?.error.code == ErrorMessage.unavailable)
        let cancelled = held.cancel(node: node.nodeId) { $0.target == .control(2) }
        #expect(cancelled.map(\.waiter.target) == [.control(2)] && cancelled.first?.error.code == ErrorMessage.cancelled)
        #expect(held.cancel(node: Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)) { _ in true }.isEmpty, "another node's cancel touches nothing")
        #expect(held.revoked { _ in false }.isEmpty)
        let revoked = held.revoked { $0 == node.nodeId }
        #expect(revoked.map(\.waiter.target) == [.gateway(generation: 2, requestID: "b")] && revoked.first?.error.code == ErrorMessage.nodeNotFound)
        #expect(held.isEmpty && held.bytes == 0)
    }

    @Test func takenEntriesPutBackStayAheadOfNewerOnes() throws {
        var held = HeldInvokes()
        let node = try node()
        for n in 0..<3 { _ = held.hold(try entry("camera.snap", asker: .control(n), at: t0), node: node, hook: .init(), now: t0) }
        let taken = held.take(node: node.nodeId)
        #expect(taken.map(\.waiter.target) == [.control(0), .control(1), .control(2)] && held.isEmpty)
        _ = held.hold(try entry("camera.snap", asker: .control(3), at: t0), node: node, hook: .init(), now: t0)
        held.putBack(Array(taken[1...]), node: node.nodeId)
        #expect(held.take(node: node.nodeId).map(\.waiter.target) == [.control(1), .control(2), .control(3)])
    }

    @Test func theHookIsCalledOncePerNodePerInterval() throws {
        var held = HeldInvokes()
        let node = try node()
        var hook = BridgeSettings.Hook()
        hook.exec = "/usr/local/lib/lanbridge/wake"
        guard case let .held(wake?) = held.hold(try entry("camera.snap", asker: .control(1), at: t0), node: node, hook: hook, now: t0) else {
            Issue.record("no wake for the first hold"); return
        }
        #expect(wake.node == node.nodeId && wake.why == ErrorMessage.backgroundUnavailable && wake.heldAt == t0)
        #expect(held.hold(try entry("camera.snap", asker: .control(2), at: t0), node: node, hook: hook, now: t0 + 29) == .held(wake: nil))
        guard case .held(_?) = held.hold(try entry("camera.snap", asker: .control(3), at: t0), node: node, hook: hook, now: t0 + WakeSchedule.intervalSeconds) else {
            Issue.record("no wake after the interval"); return
        }
    }
}

/// Found by Fuzz/'s `core` walk: an invoke still held when the bridge stopped was never answered
/// (its asker waited for a link that was going away, and its idempotency slot stayed "running").
extension BridgeCoreTests {
    @Test func aHeldInvokeHearsTheBridgeStop() throws {
        var core = try core()
        connectInBackground(&core)
        _ = core.on(.request(method: ControlMethod.nodeInvoke.name, params: held(), from: .control(5)), now: t0, wall: wall)
        #expect(core.book.held.count == 1)
        let stopped = core.on(.shutdown, now: t0 + 1, wall: wall)
        let error = try #require(Self.failure(stopped))
        #expect(Self.answers(stopped).map(\.0) == [.control(5)] && error.code == ErrorMessage.unavailable && error.retryable == true && core.book.held.isEmpty)
    }
}
