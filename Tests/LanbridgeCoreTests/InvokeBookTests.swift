import Foundation
@testable import LanbridgeCore
import LanbridgeCoreWalk
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Testing

/// The book alone, on a fake clock: what goes in flight, who is answered, and what is dropped.
struct InvokeBookTests {
    let t0 = Moment(seconds: 1_800_000_000)
    let n1 = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)
    let n2 = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)

    func book() -> InvokeBook { InvokeBook(limits: BridgeSettings().limits, random: SecureRandom.bytes) }

    /// Sends an invoke from `request` (the gateway's request ID) to `node` on `connection`; returns what went out.
    @discardableResult
    func send(
        _ book: inout InvokeBook, _ request: String, node: Fingerprint? = nil, connection: ConnectionID = 1, timeout: Int = 5000,
        origin: InvokeBook.Origin = .gateway, slot: InvokeBook.Slot? = nil
    ) -> Invoke? {
        let target: AnswerTarget = origin == .gateway ? .gateway(generation: 1, requestID: request) : .control(Int(request.utf8.first ?? 0))
        book.send(
            node: node ?? n1, connection: connection, command: "canvas.snapshot", params: nil, timeoutMs: timeout, origin: origin,
            waiter: InvokeBook.Waiter(target: target, slot: slot, command: "canvas.snapshot", started: t0), now: t0)
        return book.take().compactMap { if case let .send(invoke, _) = $0 { invoke } else { nil } }.first
    }

    func result(_ id: String, _ payload: JSONValue = ["ok": true]) throws -> InvokeResult.Received {
        try InvokeResult.received(from: SessionMessages.encode(InvokeResult(id: id, payload: payload)))
    }

    func failure(_ id: String, _ error: ErrorMessage) throws -> InvokeResult.Received {
        try InvokeResult.received(from: SessionMessages.encode(InvokeResult(id: id, error: error)))
    }

    /// The answers the book gave, by request ID.
    func answers(_ book: inout InvokeBook) -> [(String, InvokeAnswer)] {
        book.take().compactMap {
            guard case let .answer(target, answer) = $0 else { return nil }
            return switch target {
            case let .gateway(_, id): (id, answer)
            case let .control(token): ("control\(token)", answer)
            case let .openClaw(_, id): (id, answer)
            }
        }
    }

    func error(_ answer: InvokeAnswer?) -> ErrorMessage? { if case let .failure(error)? = answer { error } else { nil } }

    @Test func aResultCompletesItsRequestOnce() throws {
        var book = book()
        let sent = try #require(send(&book, "r1"))
        #expect(book.received(try result(sent.id), from: n1, connection: 1, size: 10, limit: 1000, now: t0 + 1) == nil)
        let first = answers(&book)
        #expect(first.map(\.0) == ["r1"])
        #expect(book.received(try result(sent.id), from: n1, connection: 1, size: 10, limit: 1000, now: t0 + 1) == .unknown)
        #expect(answers(&book).isEmpty && book.inFlight.isEmpty && book.inFlight(for: n1) == 0)
    }

    @Test func aLateResultIsDroppedAfterTheTimeoutAnswered() throws {
        var book = book()
        let sent = try #require(send(&book, "r1", timeout: 2000))
        book.expire(now: t0 + 1)
        #expect(answers(&book).isEmpty)
        book.expire(now: t0 + 2)
        let expired = answers(&book)
        #expect(expired.map(\.0) == ["r1"])
        #expect(error(expired.first?.1)?.code == "TIMEOUT" && error(expired.first?.1)?.retryable == true)
        #expect(book.received(try result(sent.id), from: n1, connection: 1, size: 10, limit: 1000, now: t0 + 3) == .unknown)
        #expect(answers(&book).isEmpty)
    }

    @Test func aResultAfterItsDeadlineButBeforeTheTimerIsLate() throws {
        var book = book()
        let sent = try #require(send(&book, "r1", timeout: 2000))
        #expect(book.received(try result(sent.id), from: n1, connection: 1, size: 10, limit: 1000, now: t0 + 2) == .late)
        #expect(answers(&book).isEmpty, "the timer answers it TIMEOUT; the result does not")
    }

    @Test func onlyTheNodeAskedMayAnswer() throws {
        var book = book()
        let sent = try #require(send(&book, "r1"))
        #expect(book.received(try result(sent.id), from: n2, connection: 1, size: 10, limit: 1000, now: t0) == .unknown)
        #expect(book.inFlight.count == 1 && answers(&book).isEmpty)
    }

    @Test func disconnectsFailWhatIsInFlightAtOnce() {
        var book = book()
        send(&book, "a", node: n1, connection: 1)
        send(&book, "b", node: n2, connection: 2)
        book.connectionClosed(1, now: t0)
        let nodeGone = answers(&book)
        #expect(nodeGone.map(\.0) == ["a"] && error(nodeGone.first?.1)?.code == "NODE_NOT_CONNECTED")
        book.gatewayLost(1, now: t0)
        let gatewayGone = answers(&book)
        #expect(gatewayGone.map(\.0) == ["b"] && error(gatewayGone.first?.1)?.code == "UNAVAILABLE" && book.inFlight.isEmpty)
    }

    @Test func losingTheGatewayFailsOnlyItsOwnInvokes() {
        var book = book()
        send(&book, "g", origin: .gateway)
        send(&book, "o", origin: .operator)
        book.gatewayLost(1, now: t0)
        let lost = answers(&book)
        #expect(lost.map(\.0) == ["g"] && error(lost.first?.1)?.retryable == true)
        #expect(book.inFlight.count == 1, "the operator's invoke is still waiting for its node")
    }

    @Test func aNodesOwnFailureIsPassedThroughInDetails() throws {
        var book = book()
        let sent = try #require(send(&book, "r1"))
        #expect(sent.timeoutMs == 5000, "the node is told the deadline")
        book.received(
            try failure(sent.id, ErrorMessage(code: "TIMEOUT", message: "camera busy", retryAfterMs: 250)), from: n1, connection: 1, size: 10,
            limit: 1000, now: t0 + 1)
        let failed = try #require(error(answers(&book).first?.1))
        #expect(failed.code == ErrorMessage.timeout && failed.retryAfterMs == 250)
        #expect(failed.details?["nodeError"]?["message"] == "camera busy")
    }

    @Test func anOversizedResultIsRefusedWhole() throws {
        var book = book()
        let sent = try #require(send(&book, "r1"))
        book.received(try result(sent.id), from: n1, connection: 1, size: 2000, limit: 1000, now: t0 + 1)
        let refused = try #require(error(answers(&book).first?.1))
        #expect(refused.code == ErrorMessage.payloadTooLarge && refused.details?["bytes"] == 2000)
    }

    /// Issue 21: IDs restarted at i1 in every process, so a handler still running from before a
    /// bridge restart could answer the new process's i3.
    @Test func invokeIDsDoNotRepeatAcrossProcesses() throws {
        var first = book(), second = book()
        let a = try #require(send(&first, "a")), b = try #require(send(&second, "a"))
        #expect(a.id != b.id)
        #expect(first.idPrefix != second.idPrefix && a.id.hasPrefix(first.idPrefix + "."))
    }

    /// Issue 62 §3: the prefix comes from the core's injected randomness, as its other random
    /// values do (it read `SecureRandom` of its own, so a test could not fix it).
    @Test func theIDPrefixComesFromTheCoresRandomness() throws {
        let core = try CoreWalk.pairedCore(key: X25519.KeyPair.generate(), wall: Date(), random: { Array(repeating: 0xAB, count: $0) })
        #expect(core.book.idPrefix == "iabababababab")
    }

    /// Issue 21: a result was accepted from any of the node's connections.
    @Test func aResultCountsOnlyOnTheConnectionItsInvokeWentOutOn() throws {
        var book = book()
        let sent = try #require(send(&book, "a", connection: 1))
        #expect(book.received(try result(sent.id, ["stale": true]), from: n1, connection: 9, size: 10, limit: 1000, now: t0) == .otherConnection)
        #expect(book.inFlight.count == 1 && answers(&book).isEmpty)
        #expect(book.received(try result(sent.id, .null), from: n1, connection: 1, size: 10, limit: 1000, now: t0) == nil)
        #expect(answers(&book).map(\.0) == ["a"])
    }

    /// Issue 23: a cancel answers the asker CANCELLED at once, frees the node's slot, tells the
    /// node, and a result that still comes is dropped as one that arrived after its cancel.
    @Test func aCancelAnswersAtOnceAndALateResultIsDroppedAsCancelled() throws {
        var book = book()
        let sent = try #require(send(&book, "a"))
        let found = book.cancel(node: n1, where: { $0.target == .gateway(generation: 1, requestID: "a") }, now: t0)
        #expect(found)
        let actions = book.take()
        #expect(actions.contains { if case let .cancel(cancel, 1) = $0 { cancel.id == sent.id } else { false } })
        let answered = actions.compactMap { if case let .answer(_, answer) = $0 { answer } else { nil } }
        #expect(answered.count == 1 && error(answered.first)?.code == ErrorMessage.cancelled && error(answered.first)?.retryable == false)
        #expect(book.inFlight(for: n1) == 0)
        let again = book.cancel(node: n1, where: { _ in true }, now: t0)
        #expect(!again, "once")
        #expect(book.received(try result(sent.id), from: n1, connection: 1, size: 10, limit: 1000, now: t0) == .cancelled)
    }

    @Test func anotherNodesInvokeIsNotThisCancels() throws {
        var book = book()
        send(&book, "a", node: n1)
        let found = book.cancel(node: n2, where: { _ in true }, now: t0)
        #expect(!found)
        #expect(book.inFlight.count == 1)
    }

    /// A retry with the same key joins the invoke under way and is answered with it, once.
    @Test func aJoinedRetryIsAnsweredWithTheFirst() throws {
        var book = book()
        let slot = InvokeBook.Slot(.gateway, "k")
        guard case .run = book.admit(slot, request: [1], node: "n", target: .gateway(generation: 1, requestID: "first"), now: t0) else {
            Issue.record("the first attempt did not run"); return
        }
        let sent = try #require(send(&book, "first", slot: slot))
        guard case .joined = book.admit(slot, request: [1], node: "n", target: .gateway(generation: 1, requestID: "retry"), now: t0) else {
            Issue.record("the retry did not join"); return
        }
        guard case .conflict = book.admit(slot, request: [2], node: "n", target: .gateway(generation: 1, requestID: "other"), now: t0) else {
            Issue.record("another request under the same key was not refused"); return
        }
        book.received(try result(sent.id), from: n1, connection: 1, size: 10, limit: 1000, now: t0 + 1)
        #expect(answers(&book).map(\.0) == ["first", "retry"])
        guard case .answered = book.admit(slot, request: [1], node: "n", target: .gateway(generation: 1, requestID: "late"), now: t0 + 2) else {
            Issue.record("a later retry was not answered from the cache"); return
        }
        // The operator's key of the same text is another slot.
        guard case .run = book.admit(InvokeBook.Slot(.operator, "k"), request: [1], node: "n", target: .control(1), now: t0 + 2) else {
            Issue.record("the operator's key was taken for the gateway's"); return
        }
    }

    /// The timer is armed for the earliest deadline, and only when it moves sooner.
    @Test func theTimerIsArmedForTheEarliestDeadline() {
        var book = book()
        book.send(
            node: n1, connection: 1, command: "x", params: nil, timeoutMs: 5000, origin: .gateway,
            waiter: InvokeBook.Waiter(target: .control(1), slot: nil, command: "x", started: t0), now: t0)
        #expect(book.take().contains { if case let .arm(at) = $0 { at == t0 + 5 } else { false } })
        book.send(
            node: n1, connection: 1, command: "x", params: nil, timeoutMs: 9000, origin: .gateway,
            waiter: InvokeBook.Waiter(target: .control(2), slot: nil, command: "x", started: t0), now: t0)
        #expect(!book.take().contains { if case .arm = $0 { true } else { false } }, "a later deadline does not re-arm")
        book.expire(now: t0 + 5)
        #expect(book.take().contains { if case let .arm(at) = $0 { at == t0 + 9 } else { false } })
    }

    @Test func aDenialIsAuditedOnceAMinuteWithTheCount() {
        var book = book()
        #expect(book.denial("d", now: t0) == 0)
        #expect(book.denial("d", now: t0 + 10) == nil && book.denial("d", now: t0 + 20) == nil)
        #expect(book.denial("d", now: t0 + 61) == 2)
        #expect(book.denial("e", now: t0 + 61) == 0, "another denial is its own")
    }
}
