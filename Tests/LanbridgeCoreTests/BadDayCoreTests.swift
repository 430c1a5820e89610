import Foundation
import LanbridgeCore
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeState
import Testing

/// Issue 61 in the core alone, on a fake clock (BadDayTests runs the same against real processes).
extension BridgeCoreTests {
    static func logged(_ actions: [BridgeAction]) -> [String] {
        var lines: [String] = []
        for case let .log(records) in actions { lines += records.map { "\($0.message)" } }
        return lines
    }

    /// §4: a node whose outbox is over `nodeQueueBytes` is refused new invokes at once,
    /// NODE_BACKLOGGED and retryable, until it has drained; an invoke that times out is withdrawn
    /// from the outbox.
    @Test func aBackloggedNodeIsRefusedUntilItDrainsAndATimedOutInvokeIsWithdrawn() throws {
        var core = try core()
        core.on(.opened(opening(1)), now: t0, wall: wall)
        core.on(.nodeBacklog(1, true), now: t0, wall: wall)
        let refused = Self.failure(ask(&core, invoke(), id: "g1", at: t0))
        #expect(refused?.code == ErrorMessage.nodeBacklogged && refused?.retryable == true, "\(String(describing: refused))")
        core.on(.nodeBacklog(1, false), now: t0 + 1, wall: wall)
        let sent = try #require(Self.invokeSent(ask(&core, invoke(timeoutMs: 1000), id: "g2", at: t0 + 1)))
        let late = core.on(.timerFired, now: t0 + 2.5, wall: wall)
        #expect(
            late.contains { if case .withdraw(1, sent.id) = $0 { true } else { false } }, "the timed-out invoke leaves the outbox: \(late)")
    }

    /// §2: a step of the wall clock is logged once and moves the lifetimes the core holds with
    /// it, so a pending request keeps the time it really has left; a second of drift is no step.
    @Test func aStepOfTheWallClockIsLoggedOnceAndMovesTheLifetimesHeld() throws {
        var core = try core()
        core.logger.level = .trace
        var state = core.lastState
        let request = try state.requestPairing(
            key: PublicKey(bytes: X25519.KeyPair.generate().publicKey)!, details: NodeDetails(displayName: "Tab", platform: "android", appVersion: "1"),
            source: nil, now: wall)
        core.on(.storeChanged(state, version: "v2"), now: t0 + 1, wall: wall + 1)
        let expires = try #require(core.lastState.pending.requests.first { $0.requestId == request.requestId }?.expiresAt)

        let stepped = core.on(.tick, now: t0 + 2, wall: wall + 2 + 1000)
        #expect(Self.logged(stepped).filter { $0.contains("the clock moved by +1000") }.count == 1, "\(Self.logged(stepped))")
        #expect(core.lastState.pending.requests.first?.expiresAt == expires + 1000)

        let drift = core.on(.tick, now: t0 + 3, wall: wall + 3 + 1001)
        #expect(!Self.logged(drift).contains { $0.contains("the clock moved") } && core.lastState.pending.requests.first?.expiresAt == expires + 1000)
    }
}
