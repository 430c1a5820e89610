import Foundation
@testable import LanbridgeBridge
@testable import LanbridgeCore
import LanbridgeProtocol
import Testing

struct InvokeRouterTests {
    let t0 = Moment(seconds: 1_800_000_000)

    func invoke(_ router: inout InvokeRouter, _ request: String, node: String = "N1", timeout: TimeInterval = 5) -> Invoke? {
        try? router.start(requestID: request, nodeID: node, connection: node == "N1" ? 1 : 2, command: "canvas.snapshot", params: nil,
                          timeout: timeout, now: t0).get()
    }

    @Test func aResultCompletesItsRequestOnce() throws {
        var router = InvokeRouter()
        let sent = try #require(invoke(&router, "r1"))
        #expect(router.received(InvokeResult(id: sent.id, payload: ["ok": true]), from: "N1", connection: 1, now: t0 + 1)
            == .complete(requestID: "r1", result: .ok(.value(["ok": true]))))
        guard case .dropped = router.received(InvokeResult(id: sent.id, payload: .null), from: "N1", connection: 1, now: t0 + 1) else {
            Issue.record("a duplicate result was delivered"); return
        }
        #expect(router.inFlight == 0)
    }

    @Test func aLateResultIsDroppedAfterTheTimeoutAnswered() throws {
        var router = InvokeRouter()
        let sent = try #require(invoke(&router, "r1", timeout: 2))
        #expect(router.expire(now: t0 + 1).isEmpty)
        let expired = router.expire(now: t0 + 2)
        guard case let .complete("r1", .failed(error))? = expired.first else { Issue.record("no timeout"); return }
        #expect(error.code == "TIMEOUT" && error.retryable == true)
        guard case .dropped = router.received(InvokeResult(id: sent.id, payload: .null), from: "N1", connection: 1, now: t0 + 3) else {
            Issue.record("late result delivered"); return
        }
    }

    @Test func onlyTheNodeAskedMayAnswer() throws {
        var router = InvokeRouter()
        let sent = try #require(invoke(&router, "r1", node: "N1"))
        guard case .dropped = router.received(InvokeResult(id: sent.id, payload: .null), from: "N2", connection: 2, now: t0) else {
            Issue.record("another node answered"); return
        }
        #expect(router.inFlight == 1)
    }

    @Test func concurrencyIsCappedPerNode() {
        var router = InvokeRouter(maxConcurrentPerNode: 2)
        #expect(invoke(&router, "a") != nil && invoke(&router, "b") != nil)
        guard case let .failure(error) = router.start(requestID: "c", nodeID: "N1", connection: 1, command: "x", params: nil, timeout: 5, now: t0) else {
            Issue.record("third invoke admitted"); return
        }
        #expect(error.code == "RATE_LIMITED" && error.retryable == true)
        #expect(invoke(&router, "d", node: "N2") != nil, "other nodes are unaffected")
    }

    @Test func disconnectsFailWhatIsInFlightAtOnce() {
        var router = InvokeRouter()
        _ = invoke(&router, "a", node: "N1")
        _ = invoke(&router, "b", node: "N2")
        let nodeGone = router.connectionClosed(1)
        #expect(nodeGone.count == 1)
        guard case let .complete("a", .failed(error))? = nodeGone.first else { Issue.record("not failed"); return }
        #expect(error.code == "NODE_NOT_CONNECTED")
        let gatewayGone = router.gatewayLost()
        guard case let .complete("b", .failed(unavailable))? = gatewayGone.first else { Issue.record("not failed"); return }
        #expect(unavailable.code == "UNAVAILABLE" && router.inFlight == 0)
    }

    @Test func losingTheGatewayFailsOnlyItsOwnInvokes() throws {
        var router = InvokeRouter()
        _ = try router.start(requestID: "g", nodeID: "N1", connection: 1, command: "canvas.hide", params: nil, timeout: 5, origin: .gateway, now: t0).get()
        _ = try router.start(requestID: "o", nodeID: "N1", connection: 1, command: "canvas.hide", params: nil, timeout: 5, origin: .operator, now: t0).get()
        let lost = router.gatewayLost()
        guard case let .complete("g", .failed(error))? = lost.first, lost.count == 1 else { Issue.record("\(lost)"); return }
        #expect(error.code == ErrorMessage.unavailable && error.retryable == true)
        #expect(router.inFlight == 1, "the operator's invoke is still waiting for its node")
    }

    @Test func aNodesOwnFailureIsPassedThroughInDetails() throws {
        var router = InvokeRouter()
        let sent = try #require(invoke(&router, "r1"))
        let outcome = router.received(InvokeResult(id: sent.id, error: ErrorMessage(code: "TIMEOUT", message: "camera busy")), from: "N1", connection: 1, now: t0 + 1)
        guard case let .complete("r1", .failed(error)) = outcome else { Issue.record("\(outcome)"); return }
        #expect(error.code == ErrorMessage.timeout)
        #expect(error.details?["nodeError"]?["message"] == "camera busy")
        #expect(sent.timeoutMs == 5000, "the node is told the deadline")
    }

    /// Issue 21: IDs restarted at i1 in every process, so a handler still running from before a
    /// bridge restart could answer the new process's i3.
    @Test func invokeIDsDoNotRepeatAcrossProcesses() throws {
        var first = InvokeRouter(), second = InvokeRouter()
        let a = try #require(invoke(&first, "a", node: "N1")), b = try #require(invoke(&second, "a", node: "N1"))
        #expect(a.id != b.id)
        #expect(first.idPrefix != second.idPrefix && a.id.hasPrefix(first.idPrefix + "."))
    }

    /// Issue 21: a result was accepted from any of the node's connections.
    @Test func aResultCountsOnlyOnTheConnectionItsInvokeWentOutOn() throws {
        var router = InvokeRouter()
        let sent = try #require(invoke(&router, "a", node: "N1"))  // on connection 1
        guard case let .dropped(_, _, reason) = router.received(InvokeResult(id: sent.id, payload: ["stale": true]), from: "N1", connection: 9, now: t0) else {
            Issue.record("a result from another connection answered the invoke")
            return
        }
        #expect(reason == .otherConnection && router.inFlight == 1)
        #expect(router.received(InvokeResult(id: sent.id, payload: .null), from: "N1", connection: 1, now: t0) == .complete(requestID: "a", result: .ok(.value(.null))))
    }

    /// Issue 23: a cancel answers the asker CANCELLED at once, frees the node's slot, and a result
    /// that still comes is dropped as one that arrived after its cancel.
    @Test func aCancelAnswersAtOnceAndALateResultIsDroppedAsCancelled() throws {
        var router = InvokeRouter()
        let sent = try #require(invoke(&router, "a", node: "N1"))
        #expect(router.pending(requestID: "a")?.invokeID == sent.id)
        let cancelled = router.cancel(requestID: "a")
        let (pending, outcome) = try #require(cancelled)
        #expect(pending.invokeID == sent.id && router.inFlight(forNode: "N1") == 0)
        guard case let .complete("a", .failed(error)) = outcome else { Issue.record("\(outcome)"); return }
        #expect(error.code == ErrorMessage.cancelled && error.retryable == false)
        let twice = router.cancel(requestID: "a")
        #expect(twice == nil, "once")
        guard case let .dropped(_, _, reason) = router.received(InvokeResult(id: sent.id, payload: .null), from: "N1", connection: 1, now: t0) else {
            Issue.record("a cancelled invoke was answered")
            return
        }
        #expect(reason == .cancelled)
    }
}
