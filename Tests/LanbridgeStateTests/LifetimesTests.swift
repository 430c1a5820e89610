import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
@testable import LanbridgeState
import Testing

/// Issue 61 §2: a request's and an invite's lifetime count on the boot clock, whatever the wall
/// clock does, and survive a daemon restart exactly and a reboot sensibly.
struct LifetimesTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)  // the wall clock the board booted with
    let boot = BootInstant(id: "boot-a", nanoseconds: 50_000_000_000)

    /// A state with one request (5 minutes) and one invite (10 minutes), written at t0.
    func written() throws -> PairingState {
        var state = PairingState()
        _ = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0)
        _ = state.createInvite(name: nil, ttl: 600, now: t0)
        state.anchor(wall: t0, boot: boot)
        return state
    }

    func later(_ seconds: Double) -> BootInstant { BootInstant(id: boot.id, nanoseconds: boot.nanoseconds + Int64(seconds * 1e9)) }

    @Test(arguments: [3 * 365 * 86_400.0, -86_400.0, 0])
    func aStepOfTheWallClockNeitherEndsNorStretchesThem(step: Double) throws {
        // 3 s later on the boot clock, the wall clock stepped (three years forward by NTP, a day back).
        var read = try written()
        let wall = t0.addingTimeInterval(3 + step)
        read.rebase(wall: wall, boot: later(3))
        #expect(read.pending.requests.first?.expiresAt == wall.addingTimeInterval(297))
        #expect(read.invites.invites.first?.expiresAt == wall.addingTimeInterval(597))
        #expect(read.expire(now: wall).isEmpty && read.invites.invites.count == 1, "neither is expired 3 s in")
        // 301 s in on the boot clock, with the wall clock a day behind: the request is over.
        var old = try written()
        let behind = t0.addingTimeInterval(301 - 86_400)
        old.rebase(wall: behind, boot: later(301))
        #expect(old.expire(now: behind).count == 1 && old.invites.invites.count == 1, "the request, not yet the invite")
    }

    @Test func aRebootKeepsTheWallClocksDatesButNeverMoreThanTheirLifetime() throws {
        let other = BootInstant(id: "boot-b", nanoseconds: 5_000_000_000)
        // The next boot's clock came up a year behind: the invite would live a year; it gets 10 minutes at most.
        var behind = try written()
        let wall = t0.addingTimeInterval(-365 * 86_400)
        behind.rebase(wall: wall, boot: other)
        #expect(behind.invites.invites.first?.expiresAt == wall.addingTimeInterval(600))
        // Right: a minute after, 9 minutes left.
        var right = try written()
        right.rebase(wall: t0.addingTimeInterval(60), boot: other)
        #expect(right.invites.invites.first?.expiresAt == t0.addingTimeInterval(600))
        // Anchored again in the new boot, it counts on that boot's clock from then on.
        right.anchor(wall: t0.addingTimeInterval(60), boot: other)
        #expect(right.invites.invites.first?.bootId == "boot-b")
    }

    @Test func aRecordFromBeforeAnchorsIsReadByTheWallClockAndAnchoredAtTheNextWrite() throws {
        var state = PairingState()
        _ = state.createInvite(name: nil, ttl: 600, now: t0)
        state.rebase(wall: t0.addingTimeInterval(30), boot: boot)
        #expect(state.invites.invites.first?.expiresAt == t0.addingTimeInterval(600))
        state.anchor(wall: t0.addingTimeInterval(30), boot: boot)
        #expect(state.invites.invites.first?.bootCreatedNs == boot.nanoseconds - 30_000_000_000)
    }

    /// Issue 61 §3: a used invite remembers the key it paired; that key coming back with it is
    /// the paired node, any other key (or that one revoked) is refused.
    @Test func aUsedInviteAnswersTheKeyItPairedAndNoOther() throws {
        var state = PairingState()
        let secret = state.createInvite(name: "Kitchen", ttl: 600, now: t0)
        let id = SecureSession.Invite.id(forSecret: secret)
        let key = someKey()
        let paired = try state.redeemInvite(id: id, secret: secret, key: key, details: phone(), now: t0)
        #expect(state.invites.invites.first?.isOpen(at: t0) == false)
        let again = try state.redeemInvite(id: id, secret: secret, key: key, details: phone(), now: t0 + 5)
        #expect(again.nodeId == paired.nodeId && state.paired.nodes.count == 1)
        #expect(throws: PairingError.invalidInvite) { try state.redeemInvite(id: id, secret: secret, key: someKey(), details: phone(), now: t0 + 6) }
        _ = try state.revoke(nodeId: paired.nodeId.description)
        #expect(throws: PairingError.invalidInvite) { try state.redeemInvite(id: id, secret: secret, key: key, details: phone(), now: t0 + 7) }
        _ = state.expire(now: t0 + 601)
        #expect(state.invites.invites.isEmpty, "gone when it expires")
    }
}
