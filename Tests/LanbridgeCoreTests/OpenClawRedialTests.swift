import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Testing

/// When a node's socket at an OpenClaw gateway is dialled again, decided alone (jitter fixed).
struct OpenClawRedialTests {
    let timing = OpenClawRedial.Timing(BridgeSettings().limits)

    @Test func theDefaultsAreTheLimitTables() {
        #expect(timing.backoff == 0.5...30 && timing.deviceRetry == 10)
        #expect(timing.eventWait == 5 && timing.waitingEvents == 16 && timing.canvasWait == 5 && timing.connecting == 4)
    }

    @Test func ordinaryFailuresDoubleUpToTheBoundAndALongSessionStartsOver() {
        var redial = OpenClawRedial(timing)
        let waits = (0..<8).map { _ in redial.ended(.backoff, lasted: 0.1, jitter: 0.5).wait }
        #expect(waits == [0.5, 1, 2, 4, 8, 16, 30, 30])
        #expect(redial.ended(.backoff, lasted: 3600, jitter: 0.5).wait == 0.5, "a session that stayed up was not a failure")
    }

    @Test func whatTheGatewaySaysChoosesTheWait() {
        var redial = OpenClawRedial(timing)
        let v2 = redial.ended(.signV2, lasted: 0, jitter: 0.5)
        #expect(v2.wait == 0 && v2.signV2 && !v2.quiet)
        let token = redial.ended(.sharedToken, lasted: 0, jitter: 0.5)
        #expect(token.wait == 0 && token.forgetDeviceToken)
        let reoffer = redial.ended(.reoffer, lasted: 0, jitter: 0.5)
        #expect(reoffer.wait == 0 && reoffer.quiet, "a re-offer is no socket going down")
        let fix = redial.ended(.operatorNeeded("fix the token"), lasted: 0, jitter: 0.5)
        #expect(fix.wait == 30 && fix.operatorHint == "fix the token")
    }

    /// Issue 60 §2: a refused shared token that the gateway says a device token would pass is
    /// retried at once with the node's device token when the bridge holds one; without one, a
    /// person must fix the token file.
    @Test func aRefusedSharedTokenIsRetriedWithTheDeviceTokenWhenOneIsHeld() {
        var redial = OpenClawRedial(timing)
        let held = redial.ended(.deviceToken, lasted: 0, holdsDeviceToken: true, jitter: 0.5)
        #expect(held.wait == 0 && held.operatorHint == nil && !held.forgetDeviceToken)
        let none = redial.ended(.deviceToken, lasted: 0, holdsDeviceToken: false, jitter: 0.5)
        #expect(none.wait == 30 && none.operatorHint == OpenClawNodeSession.sharedTokenHint)
    }

    @Test func aHeldDeviceIsAskedAgainOftenAndLoggedOncePerRequest() {
        var redial = OpenClawRedial(timing)
        let first = redial.ended(.deviceApproval(requestId: "r1"), lasted: 0, jitter: 0.5)
        let again = redial.ended(.deviceApproval(requestId: "r1"), lasted: 0, jitter: 0.5)
        let other = redial.ended(.deviceApproval(requestId: "r2"), lasted: 0, jitter: 0.5)
        #expect(first.wait == 10 && first.approval?.requestId == "r1" && first.newHold)
        #expect(again.approval?.requestId == "r1" && !again.newHold)
        #expect(other.newHold)
        #expect(redial.ended(.backoff, lasted: 0, jitter: 0.5).approval == nil, "the hold is shown only while the gateway says so")
    }

    @Test func theLimitsComeFromConfig() throws {
        var limits = BridgeSettings().limits
        limits[.openClawRedialMinMs] = 2000
        limits[.openClawRedialMaxMs] = 1000  // below the minimum: the minimum holds
        let timing = OpenClawRedial.Timing(limits)
        #expect(timing.backoff == 2...2)
    }
}
