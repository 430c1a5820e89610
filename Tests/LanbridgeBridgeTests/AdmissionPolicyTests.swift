import Foundation
import LanbridgeBridge
import Testing

struct AdmissionPolicyTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func policy(attempts: Int = 5, window: TimeInterval = 10, lockout: TimeInterval = 60, perAddress: Int = 100, total: Int = 100) -> AdmissionPolicy {
        var limits = AdmissionPolicy.Limits()
        (limits.attemptsPerWindow, limits.window, limits.lockout) = (attempts, window, lockout)
        (limits.maxUnauthenticatedPerAddress, limits.maxUnauthenticated) = (perAddress, total)
        return AdmissionPolicy(limits: limits)
    }

    @Test func tooManyAttemptsInTheWindowLockTheAddressOutThenItRecovers() {
        var p = policy()
        for i in 0..<5 {
            #expect(p.connection(from: "10.0.0.9", now: t0 + Double(i)) == .admit)
            p.closed(unauthenticatedFrom: "10.0.0.9")
        }
        guard case .refuse = p.connection(from: "10.0.0.9", now: t0 + 5) else { Issue.record("sixth attempt admitted"); return }
        guard case .refuse = p.connection(from: "10.0.0.9", now: t0 + 64) else { Issue.record("admitted during lockout"); return }
        #expect(p.connection(from: "10.0.0.7", now: t0 + 5) == .admit, "other addresses are unaffected")
        #expect(p.connection(from: "10.0.0.9", now: t0 + 66) == .admit, "after the lockout")
    }

    @Test func theWindowSlides() {
        var p = policy()
        for i in 0..<5 { _ = p.connection(from: "a", now: t0 + Double(i) * 3); p.closed(unauthenticatedFrom: "a") }
        // t0+12: the attempts at t0 and t0+3 have left the 10 s window, so there is room again.
        #expect(p.connection(from: "a", now: t0 + 14) == .admit)
    }

    @Test func unauthenticatedConnectionsAreCappedPerAddressAndInTotal() {
        var p = policy(attempts: 1000, perAddress: 2, total: 3)
        #expect(p.connection(from: "a", now: t0) == .admit)
        #expect(p.connection(from: "a", now: t0) == .admit)
        guard case .refuse = p.connection(from: "a", now: t0) else { Issue.record("third from a admitted"); return }
        #expect(p.connection(from: "b", now: t0) == .admit)
        guard case .refuse = p.connection(from: "c", now: t0) else { Issue.record("fourth in total admitted"); return }
        p.authenticated(from: "a")  // one of a's connections proved a paired key
        #expect(p.unauthenticatedCount == 2)
        #expect(p.connection(from: "c", now: t0) == .admit)
    }
}
