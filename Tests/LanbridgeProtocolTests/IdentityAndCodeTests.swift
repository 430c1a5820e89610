import LanbridgeCrypto
import LanbridgeProtocol
import Testing

struct FingerprintTests {
    @Test func formatIsFourGroupsOfFourCrockfordCharacters() {
        let id = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)
        let groups = id.description.split(separator: "-")
        #expect(groups.count == 4 && groups.allSatisfy { $0.count == 4 })
        #expect(id.description.allSatisfy { "0123456789ABCDEFGHJKMNPQRSTVWXYZ-".contains($0) })
        #expect(id.short == String(id.description.prefix(9)))
    }

    @Test func parsingForgivesWhatPeopleType() throws {
        let id = try #require(Fingerprint("7K2M-9QXD-3HJA-PW41"))
        #expect(Fingerprint("7k2m9qxd3hjapw41") == id)
        #expect(Fingerprint("7K2M 9QXD 3HJA PW4I") == id, "I reads as 1")
        #expect(Fingerprint("7K2M-9QXD-3HJA-PW4L") == id, "L reads as 1")
        #expect(Fingerprint("7K2M-9QXD-3HJA-PW4U") == nil, "U is not in the alphabet")
        #expect(Fingerprint("7K2M-9QXD-3HJA") == nil, "too short")
        #expect(Fingerprint("") == nil)
    }

    @Test func differentKeysGiveDifferentIDs() {
        let ids = Set((0..<1000).map { _ in Fingerprint(publicKey: SecureRandom.bytes(32)) })
        #expect(ids.count == 1000)
    }
}

struct VerificationCodeTests {
    @Test func aWrongRevealFailsTheCommitment() {
        let h = SecureRandom.bytes(32), nn = SecureRandom.bytes(32)
        let c = VerificationCode.commitment(handshakeHash: h, nodeNonce: nn)
        #expect(VerificationCode.verify(commitment: c, handshakeHash: h, nodeNonce: nn))
        #expect(!VerificationCode.verify(commitment: c, handshakeHash: SecureRandom.bytes(32), nodeNonce: nn), "other handshake")
        #expect(!VerificationCode.verify(commitment: c, handshakeHash: h, nodeNonce: SecureRandom.bytes(32)))
    }

    @Test func codesAreSixDigitsAndSpreadOut() {
        var seen = Set<String>()
        for _ in 0..<2000 {
            let code = VerificationCode.code(handshakeHash: SecureRandom.bytes(32), nodeNonce: SecureRandom.bytes(32), bridgeNonce: SecureRandom.bytes(32))
            #expect(code.count == 6 && code.allSatisfy(\.isNumber))
            seen.insert(code)
        }
        #expect(seen.count > 1990, "2000 draws from 10^6 should almost never collide")
    }
}

struct NodeDetailsSanitisingTests {
    @Test func terminalEscapesAndOversizedClaimsAreRemoved() {
        let hostile = NodeDetails(
            displayName: "Ada\u{1B}[2K\u{1B}[1A\r  code 000000\u{07}" + String(repeating: "x", count: 500),
            platform: "iOS\n", deviceModel: "\u{1B}]0;owned\u{07}iPhone",
            caps: Array(repeating: "canvas", count: 1000), commands: ["canvas.snapshot", "\u{1B}[31m", ""])
        let safe = hostile.sanitized()
        #expect(!safe.displayName.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F })
        #expect(safe.displayName.hasPrefix("Ada[2K[1A") && safe.displayName.count == NodeDetails.Limits.text)
        #expect(safe.platform == "ios")
        #expect(safe.deviceModel == "]0;ownediPhone")
        #expect(safe.caps.count == NodeDetails.Limits.listItems)
        #expect(safe.commands == ["canvas.snapshot", "[31m"])
        #expect(NodeDetails(displayName: "\u{1B}", platform: "ios").sanitized().displayName == "unnamed device")
    }
}

/// What every crypto backend must do the same (this suite runs on libsodium and on swift-crypto).
struct CryptoBackendTests {
    /// A low-order public key makes an all-zero DH result: refused, whichever backend (CryptoKit
    /// does not refuse it itself).
    @Test func aLowOrderPublicKeyIsRefused() {
        let keys = X25519.KeyPair.generate()
        for point in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            #expect(throws: CryptoError.weakPublicKey) { try X25519.sharedSecret(keys.privateKey, point) }
        }
    }
}
