import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
@testable import LanbridgeState
import Testing

func someKey() -> PublicKey { PublicKey(bytes: X25519.KeyPair.generate().publicKey)! }
func phone(_ name: String = "Ada's phone") -> NodeDetails {
    NodeDetails(
        displayName: name, platform: "ios", osVersion: "18.1", appVersion: "1.0", deviceModel: "iPhone15,2",
        caps: ["canvas", "camera"], commands: ["canvas.present", "camera.snap"], flags: .init(requiresForeground: true))
}

extension PairingState {
    /// A request whose node completed the code exchange, approved with that code: what the daemon
    /// and `nodes approve --code` do between them.
    mutating func approveRevealed(_ requestId: String, access: AccessRules? = nil, now: Date) throws -> PairedNode {
        setCode("123456", requestId: requestId)
        return try approve(requestId: requestId, code: "123456", access: access, now: now)
    }
}

struct PairingStateTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func askingAgainReturnsTheSameRequest() throws {
        var state = PairingState()
        let key = someKey()
        let first = try state.requestPairing(key: key, details: phone(), source: "10.0.0.5", now: t0)
        let again = try state.requestPairing(key: key, details: phone(), source: "10.0.0.6", now: t0 + 60)
        #expect(again.requestId == first.requestId)
        #expect(again.sourceAddress == "10.0.0.6")
        #expect(state.pending.requests.count == 1)
        #expect(first.requestId.count == 8)
    }

    /// Issue 53 §4: the stop records every connected node at once, in one pass: those named, and no other.
    @Test func lastSeenIsRecordedForTheNodesNamedOnly() throws {
        var state = PairingState()
        let nodes = try (0..<3).map { n in
            let request = try state.requestPairing(key: someKey(), details: phone("phone \(n)"), source: nil, now: t0)
            return try state.approveRevealed(request.requestId, now: t0)
        }
        state.recordSeen([nodes[0].nodeId, nodes[2].nodeId], now: t0 + 60)
        #expect(state.paired.nodes.map(\.lastSeen) == [t0 + 60, nodes[1].lastSeen, t0 + 60])
        state.recordSeen([], now: t0 + 120)
        #expect(state.paired.nodes.map(\.lastSeen) == [t0 + 60, nodes[1].lastSeen, t0 + 60])
    }

    @Test func timeToLiveIsRefreshedButCappedAtFifteenMinutes() throws {
        var state = PairingState()
        let request = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0)
        #expect(request.expiresAt == t0 + 300)
        // Refreshing every 4 minutes keeps it alive, but only until the hard cap.
        for minute in stride(from: 4, through: 12, by: 4) {
            try state.refresh(requestId: request.requestId, now: t0 + Double(minute * 60))
        }
        #expect(state.request(request.requestId)?.expiresAt == t0 + 900)
        #expect(state.expire(now: t0 + 899).isEmpty)
        let expired = state.expire(now: t0 + 900)
        #expect(expired.map(\.requestId) == [request.requestId])
        #expect(state.pending.expired.last?.requestId == request.requestId, "expiry is recorded")
    }

    @Test func approvingAnExpiredRequestSaysSo() throws {
        var state = PairingState()
        let request = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0)
        #expect(throws: PairingError.requestExpired(request.requestId, at: t0 + 300)) {
            try state.approveRevealed(request.requestId, access: .init(), now: t0 + 301)
        }
        #expect(throws: PairingError.unknownRequest("zzzzzzzz")) {
            try state.approveRevealed("zzzzzzzz", access: .init(), now: t0)
        }
    }

    @Test func approvalMovesTheRequestToPairedWithTheGivenRules() throws {
        var state = PairingState()
        let key = someKey()
        let request = try state.requestPairing(key: key, details: phone(), source: nil, now: t0)
        let node = try state.approveRevealed(request.requestId.uppercased(), access: .init(allow: ["canvas.*"]), now: t0 + 10)
        #expect(node.nodeId == key.fingerprint && node.access.allow == ["canvas.*"])
        #expect(node.firstSeen == t0 && node.pairedAt == t0 + 10)
        #expect(state.pending.requests.isEmpty)
        #expect(throws: PairingError.alreadyPaired(key.fingerprint)) {
            try state.requestPairing(key: key, details: phone(), source: nil, now: t0 + 20)
        }
    }

    @Test func atMostThirtyTwoPendingRequestsAndTheOldestMakesRoom() throws {
        var state = PairingState()
        let first = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0)
        for _ in 0..<31 { _ = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0 + 1) }
        let newest = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0 + 2)
        #expect(state.pending.requests.count == 32 && state.request(newest.requestId) != nil && state.request(first.requestId) == nil)
        // Expired ones make room again.
        _ = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0 + 302)
        #expect(state.pending.requests.count == 1)
    }

    @Test func rejectWithBlockIgnoresTheKeyFromThenOn() throws {
        var state = PairingState()
        let key = someKey()
        let request = try state.requestPairing(key: key, details: phone(), source: nil, now: t0)
        _ = try state.reject(requestId: request.requestId, block: true, now: t0)
        #expect(throws: PairingError.blocked(key.fingerprint)) {
            try state.requestPairing(key: key, details: phone(), source: nil, now: t0)
        }
        // Without --block the node may ask again, under a new ID.
        let other = someKey()
        let r1 = try state.requestPairing(key: other, details: phone(), source: nil, now: t0)
        _ = try state.reject(requestId: r1.requestId, block: false, now: t0)
        let r2 = try state.requestPairing(key: other, details: phone(), source: nil, now: t0)
        #expect(r2.requestId != r1.requestId)
    }

    @Test func revokeRemovesOnlyThatNode() throws {
        var state = PairingState()
        let keys = [someKey(), someKey()]
        for key in keys {
            let r = try state.requestPairing(key: key, details: phone(), source: nil, now: t0)
            _ = try state.approveRevealed(r.requestId, access: .init(), now: t0)
        }
        let removed = try state.revoke(nodeId: keys[0].fingerprint.description.lowercased())
        #expect(removed.publicKey == keys[0])
        #expect(state.paired.nodes.map(\.publicKey) == [keys[1]])
        #expect(throws: PairingError.unknownNode("NOPE")) { try state.revoke(nodeId: "NOPE") }
    }

    @Test(arguments: ["Ada's phone", "Ada’s phone", "ADA'S PHONE", "Аda's phone", "Ada's  phone ", "Ada's\u{200D} phone", "Adа's phοne"])
    func aKnownDeviceUnderANewKeyIsFlaggedHoweverItsNameIsSpelled(_ lookalike: String) throws {
        var state = PairingState()
        let r = try state.requestPairing(key: someKey(), details: phone("Ada's phone"), source: nil, now: t0)
        let paired = try state.approveRevealed(r.requestId, now: t0)
        let request = try state.requestPairing(key: someKey(), details: phone(lookalike), source: nil, now: t0)
        #expect(state.keyChange(for: request)?.nodeId == paired.nodeId)
    }

    @Test func onlyTheNameCountsAndDuplicatePendingNamesAreFound() throws {
        var state = PairingState()
        let r = try state.requestPairing(key: someKey(), details: phone("Ada's phone"), source: nil, now: t0)
        _ = try state.approveRevealed(r.requestId, now: t0)
        let stranger = try state.requestPairing(key: someKey(), details: phone("Bob's phone"), source: nil, now: t0)  // same model
        #expect(state.keyChange(for: stranger) == nil, "a shared device model is no sign of a key change")
        let twin = try state.requestPairing(key: someKey(), details: phone("BOB’S PHONE"), source: nil, now: t0)
        #expect(state.sameName(as: stranger).map(\.requestId) == [twin.requestId])
    }

    /// Issue 64: a browser's request says which door it came through; its approval records it as
    /// the pairing method, and its defaults are the web's whatever platform the page claims.
    @Test func aBrowsersPairingIsLabelledByItsDoorAndGetsTheWebsDefaults() throws {
        var state = PairingState()
        let key = someKey()
        let r = try state.challenge(key: key, details: phone(), source: "10.0.0.5", browser: .verified, now: t0)
        #expect(r.browser == .verified)
        state.setCode("123456", requestId: r.requestId)
        let node = try state.approve(requestId: r.requestId, code: "123456", now: t0)
        #expect(node.pairingMethod == .browser)
        #expect(node.access == AccessRules.defaults(forPlatform: "web"), "the page claimed ios; it gets the web's defaults")
        #expect(!CompiledRules(node.access).allows("camera.snap") && !CompiledRules(node.access).allows("canvas.snapshot"))
        var unverified = PairingState()
        let u = try unverified.challenge(key: someKey(), details: phone(), source: nil, browser: .unverified, now: t0)
        unverified.setCode("654321", requestId: u.requestId)
        #expect(try unverified.approve(requestId: u.requestId, code: "654321", now: t0).pairingMethod == .browserUnverified)
        // A native node's request keeps the code method.
        var native = PairingState()
        let n = try native.challenge(key: someKey(), details: phone(), source: nil, now: t0)
        native.setCode("111111", requestId: n.requestId)
        #expect(try native.approve(requestId: n.requestId, code: "111111", now: t0).pairingMethod == .code)
    }

    @Test func approvalNeedsARevealedCodeAndTheRightOneOrAnExplicitUnverified() throws {
        var state = PairingState()
        let r = try state.challenge(key: someKey(), details: phone(), source: nil, now: t0)
        #expect(throws: PairingError.notRevealed(r.requestId), "no code derived yet: never approvable") {
            try state.approve(requestId: r.requestId, code: "123456", now: t0)
        }
        #expect(throws: PairingError.notRevealed(r.requestId)) { try state.approve(requestId: r.requestId, unverified: true, now: t0) }
        state.setCode("654321", requestId: r.requestId)
        var attempt = state
        #expect(throws: PairingError.codeMismatch(expected: "654321", given: "123456")) {
            try attempt.approve(requestId: r.requestId, code: "123456", now: t0)
        }
        #expect(attempt.request(r.requestId)?.codeMismatches == 1, "the wrong code is counted, for the audit log")
        #expect(throws: PairingError.verificationRequired(r.requestId)) { try state.approve(requestId: r.requestId, now: t0) }
        var unverified = state
        #expect(try unverified.approve(requestId: r.requestId, unverified: true, now: t0).unverified == true)
        let node = try state.approve(requestId: r.requestId, code: "654321", now: t0)
        #expect(node.access == AccessRules.defaults(forPlatform: "ios") && node.unverified == nil)
    }

    /// Re-asking with the same key re-rolls the bridge's nonce, so the code: each challenge is one
    /// 10⁻⁶ chance for a man in the middle, and a request gets at most three.
    @Test func aRequestGetsAtMostThreeCodeChallengesThenIsLockedForGood() throws {
        var state = PairingState()
        let key = someKey()
        var codes = 0
        for attempt in 1...10 {
            let r = try state.challenge(key: key, details: phone(), source: "10.0.0.5", now: t0 + Double(attempt))
            if r.locked == nil {
                codes += 1
                #expect(r.code == nil, "a new challenge voids the last code")
                state.setCode(String(format: "%06d", attempt), requestId: r.requestId)
            }
        }
        #expect(codes == PairingState.Limits.challengesPerRequest)
        let request = try #require(state.pending.requests.first)
        #expect(request.locked == .tooManyChallenges && request.challenges == 3)
        #expect(throws: PairingError.requestLocked(request.requestId, .tooManyChallenges)) {
            try state.approve(requestId: request.requestId, code: request.code ?? "000003", now: t0 + 20)
        }
        #expect(request.expiresAt == t0 + 4 + 300, "the challenge that locked it was the last to keep it alive")
        // The attacker's chance over the request's whole life, from the limits themselves.
        let bound = Double(PairingState.Limits.challengesPerRequest) * 1e-6
        #expect(bound <= 3e-6, "PROTOCOL.md §7 promises at most 3 × 10⁻⁶ per request")
    }

    @Test func aFailedRevealLocksTheRequest() throws {
        var state = PairingState()
        let r = try state.challenge(key: someKey(), details: phone(), source: nil, now: t0)
        state.commitmentFailed(requestId: r.requestId)
        state.setCode("111111", requestId: r.requestId)  // too late: a locked request takes no code
        #expect(state.request(r.requestId)?.code == nil)
        #expect(throws: PairingError.requestLocked(r.requestId, .commitmentFailed)) {
            try state.approve(requestId: r.requestId, unverified: true, now: t0)
        }
    }

    @Test func pendingRequestsAreCappedPerAddressAndEvictInsteadOfRefusingAtTheOtherCaps() throws {
        var state = PairingState()
        for i in 0..<4 { _ = try state.requestPairing(key: someKey(), details: phone(), source: "10.0.0.9", now: t0 + Double(i)) }
        #expect(throws: PairingError.tooManyFromAddress("10.0.0.9", limit: 4)) {
            try state.requestPairing(key: someKey(), details: phone(), source: "10.0.0.9", now: t0 + 5)
        }
        // The same /24 from other addresses: at 16 the next one evicts the most crowded address's oldest.
        for i in 0..<12 { _ = try state.requestPairing(key: someKey(), details: phone(), source: "10.0.0.\(20 + i)", now: t0 + 10 + Double(i)) }
        #expect(state.pending.requests.count == 16)
        let newcomer = try state.requestPairing(key: someKey(), details: phone("New phone"), source: "10.0.0.200", now: t0 + 30)
        #expect(state.pending.requests.count == 16 && state.request(newcomer.requestId) != nil)
        #expect(state.pending.requests.filter { $0.sourceAddress == "10.0.0.9" }.count == 3, "10.0.0.9 held the most")
        #expect(state.pending.expired.last?.evicted == true)
        // Other networks fill the rest; at 32 in all, a locked request is the first to go.
        for i in 0..<16 { _ = try state.requestPairing(key: someKey(), details: phone(), source: "192.168.\(i).1", now: t0 + 40) }
        let locked = state.pending.requests[5]
        state.commitmentFailed(requestId: locked.requestId)
        _ = try state.requestPairing(key: someKey(), details: phone(), source: "172.16.0.1", now: t0 + 50)
        #expect(state.pending.requests.count == 32 && state.request(locked.requestId) == nil)
    }

    @Test func rejectingByAddressTakesAllOfItsRequests() throws {
        var state = PairingState()
        for _ in 0..<3 { _ = try state.requestPairing(key: someKey(), details: phone(), source: "10.0.0.9", now: t0) }
        let other = try state.requestPairing(key: someKey(), details: phone(), source: "10.0.0.8", now: t0)
        #expect(state.reject(from: "10.0.0.9", block: true, now: t0).count == 3)
        #expect(state.pending.requests.map(\.requestId) == [other.requestId] && state.paired.blocked.count == 3)
    }

    @Test func everyChallengeLockAndWrongCodeIsAudited() throws {
        var state = PairingState()
        let key = someKey()
        var before = state
        let r = try state.challenge(key: key, details: phone(), source: "10.0.0.5", now: t0)
        #expect(AuditEntry.changes(from: before, to: state, actor: "bridge", now: t0).map(\.event) == ["pairing.requested", "pairing.challenged"])
        state.setCode("123456", requestId: r.requestId)
        before = state
        _ = try? state.approve(requestId: r.requestId, code: "000000", now: t0)
        #expect(AuditEntry.changes(from: before, to: state, actor: "uid:0", now: t0).map(\.event) == ["pairing.code-mismatch"])
        before = state
        state.commitmentFailed(requestId: r.requestId)
        #expect(AuditEntry.changes(from: before, to: state, actor: "bridge", now: t0).map(\.event) == ["pairing.locked"])
        var approved = PairingState()
        let second = try approved.challenge(key: someKey(), details: phone(), source: nil, now: t0)
        approved.setCode("222222", requestId: second.requestId)
        before = approved
        _ = try approved.approve(requestId: second.requestId, unverified: true, now: t0)
        let entry = try #require(AuditEntry.changes(from: before, to: approved, actor: "uid:0", now: t0).first)
        #expect(entry.event == "pairing.approved" && entry.detail?.hasPrefix("UNVERIFIED") == true)
    }

    @Test func challengesAreLimitedPerKeyAndPerAddressPerHour() {
        let m0 = Moment(seconds: 1_800_000_000)
        var limits = ChallengeLimits()
        let key = someKey()
        for i in 0..<6 { #expect(limits.admit(key: key, address: "10.0.1.\(i)", now: m0) == nil) }
        #expect(limits.admit(key: key, address: "10.0.0.99", now: m0) != nil, "seventh for the key")
        for _ in 0..<10 { #expect(limits.admit(key: someKey(), address: "10.0.0.0", now: m0) == nil) }
        #expect(limits.admit(key: someKey(), address: "10.0.0.0", now: m0) != nil, "eleventh from the address")
        #expect(limits.admit(key: key, address: "10.0.0.50", now: m0 + 3600) == nil, "an hour later")
    }

    /// Issue 48 §6: one of OpenClaw's apps is approved by the start of the certificate fingerprint
    /// it shows, compared with the one the bridge served it (the console's check, for the CLI too).
    @Test func anAppIsApprovedOnlyByTheStartOfTheFingerprintItWasServed() throws {
        var state = PairingState()
        let sha = "0b96356bc93bfd59d2cc3ea93b0bacae61fa8040eab5006ac997714ff837a68c"
        let claim = OpenClawAppClaim(deviceId: "d", publicKey: "k", clientId: "openclaw-ios", tlsSha256: sha)
        let key = try #require(PublicKey(bytes: X25519.KeyPair.generate().publicKey))
        let request = try state.requestAppPairing(claim, key: key, details: NodeDetails(displayName: "Ada's iPhone", platform: "ios"), source: "10.0.0.7", now: Date())
        #expect(throws: PairingError.fingerprintRequired(request.requestId)) { try state.approve(requestId: request.requestId, now: Date()) }
        for wrong in ["0b963", "zzzzzz", "0b96356b", ""] {
            var copy = state
            #expect(throws: PairingError.self) { try copy.approve(requestId: request.requestId, code: wrong, now: Date()) }
        }
        #expect(throws: PairingError.fingerprintMismatch(given: "1b9635")) { try state.approve(requestId: request.requestId, code: "1b9635", now: Date()) }
        #expect(state.request(request.requestId)?.codeMismatches == 1, "counted, so audited")
        let node = try state.approve(requestId: request.requestId, code: "0B9635".lowercased(), now: Date())
        #expect(node.openClawApp == claim && node.unverified == nil)

        // Plain ws: no fingerprint exists, so only an approval without comparing, recorded as such.
        var plain = PairingState()
        let bare = OpenClawAppClaim(deviceId: "e", publicKey: "l", clientId: "openclaw-android", tlsSha256: nil)
        let other = try plain.requestAppPairing(
            bare, key: try #require(PublicKey(bytes: X25519.KeyPair.generate().publicKey)),
            details: NodeDetails(displayName: "Pixel", platform: "android"), source: nil, now: Date())
        #expect(throws: PairingError.self) { try plain.approve(requestId: other.requestId, code: "000000", now: Date()) }
        #expect(try plain.approve(requestId: other.requestId, unverified: true, now: Date()).unverified == true)
    }
}

/// The audit's reading of what changed (issue 50 §5): a setup code an app redeemed is a redemption,
/// not a revocation; one the operator withdrew is a revocation.
struct AuditDiffTests {
    @Test func aRedeemedSetupCodeIsAuditedAsRedeemedAndAWithdrawnOneAsRevoked() throws {
        let now = Date()
        var before = PairingState()
        let token = before.createOpenClawBootstrap(name: "Ada's iPhone", ttl: 600, now: now)
        var after = before
        let claim = OpenClawAppClaim(deviceId: "d", publicKey: "k", clientId: "openclaw-ios", tlsSha256: nil)
        let node = try after.redeemOpenClawBootstrap(
            token, claim: claim, key: try #require(PublicKey(bytes: X25519.KeyPair.generate().publicKey)),
            details: NodeDetails(displayName: "Ada's iPhone", platform: "ios"), now: now)
        let redeemed = AuditEntry.changes(from: before, to: after, actor: "bridge", now: now)
        #expect(redeemed.map(\.event) == ["pairing.invite-redeemed"], "\(redeemed.map(\.event))")
        #expect(redeemed.first?.nodeId == node.nodeId.description && redeemed.first?.detail?.contains("setup code") == true, "\(redeemed)")

        var withdrawn = before
        withdrawn.invites.invites.removeAll()
        #expect(AuditEntry.changes(from: before, to: withdrawn, actor: "uid:0", now: now).map(\.event) == ["invite.revoked"])
    }
}
