import Foundation
@testable import LanbridgeCore
import LanbridgeCrypto
@testable import LanbridgeProtocol
@testable import LanbridgeState
import Testing

/// Ask rules (issue 52 §1) in the core alone, on a fake clock: an asked invoke waits for the
/// operator's answer, runs once on yes, fails ASKED_DENIED on no and ASK_TIMEOUT when nobody
/// answers, is bounded, and a `--for` grant lets the next one through until it lapses.
extension BridgeCoreTests {
    func askingCore(timeoutMs: Int = 60_000, perNode: Int = 8) throws -> BridgeCore {
        var core = try core()
        var rules = core.lastState
        rules.paired.nodes[0].access.ask = ["device.info"]
        _ = core.on(.storeChanged(rules, version: "ask"), now: t0)
        var settings = BridgeSettings()
        settings.limits[.askTimeoutMs] = timeoutMs
        settings.limits[.askPerNode] = perNode
        _ = core.on(.reload(settings), now: t0)
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        _ = core.on(.received(state(true), from: 1), now: t0, wall: wall)
        return core
    }

    func answerAsk(_ core: inout BridgeCore, _ id: String, approve: Bool, forMs: Int? = nil, at now: Moment) -> [BridgeAction] {
        var params: [String: JSONValue] = ["id": .string(id), "approve": .bool(approve), "answeredBy": "uid:1000"]
        if let forMs { params["forMs"] = .number(Double(forMs)) }
        return core.on(.request(method: ControlMethod.askAnswer.name, params: .object(params), from: .control(7)), now: now, wall: wall)
    }

    @Test func anAskedInvokeWaitsThenRunsOnceOnYes() throws {
        var core = try askingCore()
        let asked = ask(&core, invoke("device.info"), id: "g1", at: t0 + 1)
        #expect(Self.answers(asked).isEmpty && Self.invokeSent(asked) == nil, "neither answered nor sent")
        let id = try #require(core.book.asked.entries.first?.id)
        let yes = answerAsk(&core, id, approve: true, at: t0 + 2)
        let sent = try #require(Self.invokeSent(yes), "sent once the operator said yes")
        #expect(yes.contains { if case let .audit(entries) = $0 { entries.first?.event == "invoke.ask-approved" && entries.first?.actor == "uid:1000" } else { false } })
        let done = core.on(.received(result(for: sent), from: 1), now: t0 + 3, wall: wall)
        guard case .success? = Self.answers(done).first(where: { $0.0 == .gateway(generation: 1, requestID: "g1") })?.1 else {
            Issue.record("the gateway heard the node's result: \(done)")
            return
        }
        // Once: the next one waits again; the spent ID is refused and changes nothing.
        #expect(Self.invokeSent(ask(&core, invoke("device.info"), id: "g2", at: t0 + 4)) == nil)
        let again = answerAsk(&core, id, approve: true, at: t0 + 5)
        #expect(Self.failure(again)?.details?["reason"] == "UNKNOWN_ASK" && core.book.asked.count == 1)
    }

    /// Asked while the node is in front, approved once it has gone to the background: it is held
    /// (it asked to be), and when the node comes back it runs; the operator is not asked twice.
    @Test func anApprovedInvokeThatIsHeldIsNotAskedAgainWhenItRuns() throws {
        var core = try core()
        var rules = core.lastState
        rules.paired.nodes[0].access.ask = ["camera.snap"]
        _ = core.on(.storeChanged(rules, version: "ask"), now: t0)
        _ = core.on(.opened(opening(1)), now: t0, wall: wall)
        _ = core.on(.received(state(true), from: 1), now: t0, wall: wall)
        _ = ask(&core, held("camera.snap", maxMs: 60_000), id: "g1", at: t0)
        let id = try #require(core.book.asked.entries.first?.id)
        _ = core.on(.received(state(false), from: 1), now: t0 + 1, wall: wall)
        let yes = answerAsk(&core, id, approve: true, at: t0 + 2)
        #expect(Self.invokeSent(yes) == nil && core.book.held.count == 1, "approved, and held for the foreground")
        let front = core.on(.received(state(true), from: 1), now: t0 + 3, wall: wall)
        #expect(core.book.asked.count == 0, "the operator is not asked twice")
        #expect(Self.invokeSent(front)?.command == "camera.snap")
    }

    @Test func noIsAskedDeniedAndSilenceIsAskTimeout() throws {
        var core = try askingCore(timeoutMs: 1000)
        _ = ask(&core, invoke("device.info"), id: "g1", at: t0)
        let no = answerAsk(&core, try #require(core.book.asked.entries.first?.id), approve: false, at: t0 + 0.5)
        let denied = try #require(Self.failure(no))
        #expect(denied.code == ErrorMessage.forbidden && denied.details?["reason"] == .string(ErrorMessage.askedDenied) && denied.retryable == false)
        _ = ask(&core, invoke("device.info"), id: "g2", at: t0 + 1)
        #expect(Self.answers(core.on(.timerFired, now: t0 + 1.5)).isEmpty, "not yet")
        let late = try #require(Self.failure(core.on(.timerFired, now: t0 + 2)))
        #expect(late.details?["reason"] == .string(ErrorMessage.askTimeout) && core.book.asked.count == 0)
        #expect(core.activity.records(since: 0, node: nil, command: nil, limit: 10).map(\.outcome) == [ErrorMessage.askedDenied, ErrorMessage.askTimeout])
    }

    @Test func pastTheBoundTheNewestIsRefusedAndAGrantLetsTheNextThrough() throws {
        var core = try askingCore(perNode: 2)
        _ = ask(&core, invoke("device.info"), id: "g1", at: t0)
        _ = ask(&core, invoke("device.info"), id: "g2", at: t0)
        let third = try #require(Self.failure(ask(&core, invoke("device.info"), id: "g3", at: t0)))
        #expect(third.code == ErrorMessage.holdLimit && third.details?["reason"] == .string(ErrorMessage.askLimit) && third.retryable == true)
        #expect(core.book.asked.count == 2, "the older ones still wait")
        // Yes for ten seconds: the next one runs without asking, until the grant lapses.
        _ = answerAsk(&core, core.book.asked.entries[0].id, approve: true, forMs: 10_000, at: t0 + 1)
        #expect(Self.invokeSent(ask(&core, invoke("device.info"), id: "g4", at: t0 + 2)) != nil)
        #expect(Self.invokeSent(ask(&core, invoke("device.info"), id: "g5", at: t0 + 12)) == nil, "lapsed: asked again")
    }

    @Test func aStopAnswersEveryAskedInvokeRetryable() throws {
        var core = try askingCore()
        _ = ask(&core, invoke("device.info"), id: "g1", at: t0)
        let stopped = try #require(Self.failure(core.on(.shutdown, now: t0 + 1)))
        #expect(stopped.code == ErrorMessage.unavailable && stopped.retryable == true)
    }
}

extension BridgeCoreTests {
    /// "always" is audited only when the ask rule is gone from the rules the core holds; before
    /// that it is refused and the invoke still waits.
    @Test func alwaysIsRefusedWhileTheAskRuleStands() throws {
        var core = try askingCore()
        _ = ask(&core, invoke("device.info"), id: "g1", at: t0)
        let id = try #require(core.book.asked.entries.first?.id)
        let params: JSONValue = ["id": .string(id), "approve": true, "always": true, "answeredBy": "uid:1000"]
        let early = core.on(.request(method: ControlMethod.askAnswer.name, params: params, from: .control(7)), now: t0 + 1, wall: wall)
        #expect(Self.failure(early)?.code == ErrorMessage.invalidRequest && core.book.asked.count == 1)
        var rules = core.lastState
        _ = try rules.askToAllow("device.info", node: nodeId)
        _ = core.on(.storeChanged(rules, version: "always"), now: t0 + 2)
        let done = core.on(.request(method: ControlMethod.askAnswer.name, params: params, from: .control(7)), now: t0 + 3, wall: wall)
        #expect(Self.invokeSent(done) != nil && core.book.asked.count == 0)
    }
}

extension BridgeCoreTests {
    /// The agent cannot answer its own question: ask.list and ask.answer exist on the operator's
    /// control socket only; from the gateway they are unknown methods, and the invoke still waits.
    @Test func theGatewayCannotAnswerAnAsk() throws {
        var core = try askingCore()
        _ = ask(&core, invoke("device.info"), id: "g1", at: t0)
        let id = try #require(core.book.asked.entries.first?.id)
        for (method, params) in [(ControlMethod.askAnswer.name, ["id": .string(id), "approve": true] as JSONValue), (ControlMethod.askList.name, [:] as JSONValue)] {
            let tried = core.on(.request(method: method, params: params, from: .gateway(generation: 1, requestID: "g2")), now: t0 + 1, wall: wall)
            #expect(Self.failure(tried)?.code == ErrorMessage.unknownMethod && Self.invokeSent(tried) == nil, "\(method)")
        }
        #expect(core.book.asked.count == 1)
    }
}
