import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
@testable import LanbridgeState
import Testing

func someKey() -> PublicKey { PublicKey(bytes: X25519.KeyPair.generate().publicKey)! }
func phone(_ name: String = "Ada's phone") -> NodeDetails {
    NodeDetails(displayName: name, platform: "ios", osVersion: "18.1", appVersion: "1.0", deviceModel: "iPhone15,2",
                caps: ["canvas", "camera"], commands: ["canvas.present", "camera.snap"], flags: .init(requiresForeground: true))
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
            try state.approve(requestId: request.requestId, access: .init(), now: t0 + 301)
        }
        #expect(throws: PairingError.unknownRequest("zzzzzzzz")) {
            try state.approve(requestId: "zzzzzzzz", access: .init(), now: t0)
        }
    }

    @Test func approvalMovesTheRequestToPairedWithTheGivenRules() throws {
        var state = PairingState()
        let key = someKey()
        let request = try state.requestPairing(key: key, details: phone(), source: nil, now: t0)
        let node = try state.approve(requestId: request.requestId.uppercased(), access: .init(allow: ["canvas.*"]), now: t0 + 10)
        #expect(node.nodeId == key.fingerprint && node.access.allow == ["canvas.*"])
        #expect(node.firstSeen == t0 && node.pairedAt == t0 + 10)
        #expect(state.pending.requests.isEmpty)
        #expect(throws: PairingError.alreadyPaired(key.fingerprint)) {
            try state.requestPairing(key: key, details: phone(), source: nil, now: t0 + 20)
        }
    }

    @Test func atMostThirtyTwoPendingRequests() throws {
        var state = PairingState()
        for _ in 0..<32 { _ = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0) }
        #expect(throws: PairingError.tooManyPending(limit: 32)) {
            try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0)
        }
        // Expired ones make room again.
        _ = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0 + 301)
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
            _ = try state.approve(requestId: r.requestId, access: .init(), now: t0)
        }
        let removed = try state.revoke(nodeId: keys[0].fingerprint.description.lowercased())
        #expect(removed.publicKey == keys[0])
        #expect(state.paired.nodes.map(\.publicKey) == [keys[1]])
        #expect(throws: PairingError.unknownNode("NOPE")) { try state.revoke(nodeId: "NOPE") }
    }

    @Test func aKnownDeviceUnderANewKeyIsFlagged() throws {
        var state = PairingState()
        let r = try state.requestPairing(key: someKey(), details: phone("Ada's phone"), source: nil, now: t0)
        let paired = try state.approve(requestId: r.requestId, now: t0)
        var renamed = phone("Someone else")
        renamed.deviceModel = "Pixel 9"
        let stranger = try state.requestPairing(key: someKey(), details: renamed, source: nil, now: t0)
        #expect(state.keyChange(for: stranger) == nil)
        let lookalike = try state.requestPairing(key: someKey(), details: phone("Ada's phone"), source: nil, now: t0)
        #expect(state.keyChange(for: lookalike)?.nodeId == paired.nodeId, "same name and model, new key")
    }

    @Test func approvalWithACodeMustMatchIt() throws {
        var state = PairingState()
        let r = try state.requestPairing(key: someKey(), details: phone(), source: nil, now: t0)
        #expect(throws: PairingError.codeMismatch(expected: nil, given: "123456"), "no code derived yet") {
            try state.approve(requestId: r.requestId, code: "123456", now: t0)
        }
        state.setCode("654321", requestId: r.requestId)
        #expect(throws: PairingError.codeMismatch(expected: "654321", given: "123456")) {
            try state.approve(requestId: r.requestId, code: "123456", now: t0)
        }
        let node = try state.approve(requestId: r.requestId, code: "654321", now: t0)
        #expect(node.access == AccessRules.defaults(forPlatform: "ios"))
    }
}
