import Foundation
import LanbridgeCore
import LanbridgeProtocol
import LanbridgeState
import Testing

struct AdmissionPolicyTests {
    /// Issue 39: one default per limit. The policy's limits come from the config's entries (whose
    /// defaults are written once, in BridgeSettings), and several listeners share the cap.
    @Test func theLimitsAreTheConfigsWithOneDefault() {
        let defaults = AdmissionPolicy.Limits()
        let settings = BridgeSettings.Admission()
        #expect(
            defaults.maxUnauthenticated == settings[.maxUnauthenticated] && defaults.maxWaiting == settings[.maxWaiting]
                && defaults.window == Double(settings[.windowSeconds]) && defaults.maxUnauthenticatedPerListener == settings[.maxUnauthenticated])
        var config = BridgeSettings.Admission()
        config[.maxUnauthenticated] = 100
        config[.unpairedDeadlineSeconds] = 2
        let two = AdmissionPolicy.Limits(config, listeners: 2)
        #expect(two.maxUnauthenticatedPerListener == 75 && two.unpairedDeadline == 2 && two.pressuredDeadline == 2)
        config[.maxUnauthenticatedPerListener] = 10
        #expect(AdmissionPolicy.Limits(config, listeners: 2).maxUnauthenticatedPerListener == 10)
    }

    let t0 = Moment(seconds: 1_800_000_000)

    func policy(
        attempts: Int = 5, window: TimeInterval = 10, lockout: TimeInterval = 60, perAddress: Int = 100, total: Int = 100,
        waiting: Int = 32, maxAddresses: Int = 4096
    ) -> AdmissionPolicy {
        var limits = AdmissionPolicy.Limits()
        (limits.attemptsPerWindow, limits.window, limits.lockout) = (attempts, window, lockout)
        (limits.maxUnauthenticatedPerAddress, limits.maxUnauthenticated, limits.maxWaiting) = (perAddress, total, waiting)
        limits.maxAddresses = maxAddresses
        return AdmissionPolicy(limits: limits)
    }

    /// Admits and returns the slot (and what it evicted); records an issue if refused.
    @discardableResult
    func admit(
        _ p: inout AdmissionPolicy, _ address: String, listener: Int = 0, at now: Moment,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> (slot: Int, evicted: [Int]) {
        guard case let .admit(slot, evicted, _) = p.connection(from: address, listener: listener, now: now) else {
            Issue.record("\(address) refused", sourceLocation: sourceLocation)
            return (-1, [])
        }
        return (slot, evicted)
    }

    @Test func tooManyAttemptsInTheWindowLockTheAddressOutThenItRecovers() {
        var p = policy()
        for i in 0..<5 { p.release(admit(&p, "10.0.0.9", at: t0 + Double(i)).slot) }
        #expect(!p.connection(from: "10.0.0.9", now: t0 + 5).isAdmitted, "sixth attempt")
        #expect(!p.connection(from: "10.0.0.9", now: t0 + 64).isAdmitted, "during the lockout")
        admit(&p, "10.0.0.7", at: t0 + 5)  // other addresses are unaffected
        admit(&p, "10.0.0.9", at: t0 + 66)  // after the lockout
    }

    @Test func theWindowSlides() {
        var p = policy()
        for i in 0..<5 { p.release(admit(&p, "a", at: t0 + Double(i) * 3).slot) }
        // t0+14: the attempts at t0 and t0+3 have left the 10 s window, so there is room again.
        admit(&p, "a", at: t0 + 14)
    }

    @Test func thePerAddressCapRefuses() {
        var p = policy(attempts: 1000, perAddress: 2, total: 100)
        admit(&p, "a", at: t0)
        let second = admit(&p, "a", at: t0).slot
        #expect(p.connection(from: "a", now: t0) == .refuse(.perAddressCap("a", limit: 2)))
        p.release(second)  // one of a's connections proved a paired key
        admit(&p, "a", at: t0)
    }

    /// At the global cap nobody is refused: the oldest connection of the most crowded address goes.
    @Test func theGlobalCapEvictsTheOldestOfTheMostCrowdedAddress() {
        var p = policy(attempts: 1000, perAddress: 8, total: 4)
        let a1 = admit(&p, "a", at: t0).slot
        let b1 = admit(&p, "b", at: t0 + 1).slot
        let a2 = admit(&p, "a", at: t0 + 2).slot
        admit(&p, "c", at: t0 + 3)
        let d = admit(&p, "d", at: t0 + 4)
        #expect(d.evicted == [a1], "a holds two, so its oldest goes, though b's is older than a's second")
        #expect(p.unauthenticatedCount == 4)
        let e = admit(&p, "e", at: t0 + 5)
        #expect(e.evicted == [b1], "now every address holds one: the oldest goes")
        _ = a2
    }

    /// 200 addresses with 4 silent connections each stay under every per-address limit; the pool
    /// stays at its cap, and a newcomer (a paired node reconnecting) is still admitted.
    @Test func aFloodFromManyAddressesNeverLocksOutANewcomer() {
        var p = policy(attempts: 20, perAddress: 8, total: 64)
        for round in 0..<4 {
            for host in 2..<202 { admit(&p, "127.0.\(host / 250).\(host % 250 + 2)", at: t0 + Double(round) * 0.01) }
        }
        #expect(p.unauthenticatedCount == 64)
        let newcomer = admit(&p, "10.0.0.1", at: t0 + 1)
        #expect(newcomer.slot > 0 && newcomer.evicted.count == 1)
    }

    @Test func unpairedConnectionsHaveADeadlineShorterUnderPressure() {
        var p = policy(attempts: 1000, total: 8)
        guard case let .admit(calm, _, calmTimeout) = p.connection(from: "a", now: t0) else { Issue.record("refused"); return }
        #expect(calmTimeout == 5)
        for _ in 0..<6 { admit(&p, "b", at: t0) }
        guard case let .admit(pressured, _, pressuredTimeout) = p.connection(from: "c", now: t0) else { Issue.record("refused"); return }
        #expect(pressuredTimeout == 1, "7 of 8 slots in use")
        #expect(p.overdue(now: t0 + 2.9).isEmpty)
        #expect(p.overdue(now: t0 + 3).contains(pressured))
        #expect(!p.overdue(now: t0 + 9.9).contains(calm))
        #expect(p.overdue(now: t0 + 10).contains(calm))
    }

    @Test func waitingConnectionsLeaveTheHandshakePoolAndHaveTheirOwnCap() {
        var p = policy(attempts: 1000, total: 2, waiting: 2)
        let w1 = admit(&p, "a", at: t0).slot, w2 = admit(&p, "b", at: t0 + 1).slot
        #expect(p.waiting(w1).isEmpty && p.waiting(w2).isEmpty)
        #expect(p.unauthenticatedCount == 0 && p.waitingCount == 2)
        #expect(p.overdue(now: t0 + 3600).isEmpty, "a waiting connection has no deadline here")
        let w3 = admit(&p, "c", at: t0 + 2)
        #expect(w3.evicted.isEmpty, "the handshake pool has room")
        #expect(p.waiting(w3.slot) == [w1], "over the waiting cap: the oldest waiting one goes")
    }

    @Test func addressesSeenOnceAreForgotten() {
        var p = policy(attempts: 20, maxAddresses: 4096)
        for i in 0..<60_000 {
            let slot = admit(&p, "10.\(i / 65536).\(i / 256 % 256).\(i % 256)", at: t0 + Double(i) / 10_000).slot
            p.release(slot)
        }
        #expect(p.addressesRemembered <= 4096, "bounded while the flood goes on")
        p.prune(now: t0 + 60)
        #expect(p.addressesRemembered == 0, "and empty once the window has passed")
    }

    /// Issue 25: a flood on one listener (the LAN) must leave room on another (the tailnet).
    @Test func eachListenerHasItsOwnCapAndTheTotalEvictsFromTheBusiest() {
        var limits = AdmissionPolicy.Limits()
        (limits.maxUnauthenticated, limits.maxUnauthenticatedPerListener, limits.maxUnauthenticatedPerAddress) = (8, 6, 100)
        limits.attemptsPerWindow = 1000
        var p = AdmissionPolicy(limits: limits)
        var lan = (0..<6).map { i in admit(&p, "10.0.0.\(i % 3)", listener: 0, at: t0) }
        #expect(lan.allSatisfy { $0.evicted.isEmpty })
        // The seventh on the LAN evicts one of the LAN's own, never refused.
        let seventh = admit(&p, "10.0.0.9", listener: 0, at: t0)
        #expect(seventh.evicted.count == 1 && lan.map(\.slot).contains(seventh.evicted[0]))
        lan.append(seventh)
        #expect(p.unauthenticatedCount == 6)
        // The tailnet gets its two without touching anything; past the total, the LAN pays.
        let tailnet = (0..<2).map { i in admit(&p, "100.64.0.\(i)", listener: 1, at: t0) }
        #expect(tailnet.allSatisfy { $0.evicted.isEmpty })
        let more = admit(&p, "100.64.0.9", listener: 1, at: t0).evicted
        #expect(
            more.count == 1 && lan.map(\.slot).contains(more[0]) && !tailnet.map(\.slot).contains(more[0]),
            "evicted from the LAN, the busiest listener")
        #expect(p.unauthenticatedCount == 8)
    }
}
