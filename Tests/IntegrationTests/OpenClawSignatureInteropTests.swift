import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import Testing
import TestSupport

/// lanbridge's OpenClaw device proofs against code we did not write: bamboo-claw (an OpenClaw
/// operator client on PyPI) signs v2 payloads, and PyNaCl verifies v3 ones.
@Suite(.enabled(if: Python.hasModule("bamboo_claw_client"), "needs bamboo-claw and PyNaCl (pip install bamboo-claw; scripts/setup installs it)"))
struct OpenClawSignatureInteropTests {
    static let script = Repository.url("Tests/IntegrationTests/python/openclaw_signer.py").path

    func python(_ arguments: [String]) throws -> String {
        let child = try ChildProcess(URL(fileURLWithPath: Python.executable), [Self.script] + arguments)
        let line = try child.nextLine() ?? ""
        #expect(child.wait() == 0, "\(child.standardError)")
        return line
    }

    /// Ed25519 is deterministic, so the same signature means the same payload, byte for byte.
    @Test(arguments: [("", "2f1c5a0e-7d2b-4c55-9e8f-0a1b2c3d4e5f"), ("shared-token-ü", "nonce|with|pipes")])
    func v2ProofsMatchBambooClaws(token: String, nonce: String) throws {
        let seed = SecureRandom.bytes(32)
        let device = OpenClawDevice(key: try Ed25519.KeyPair(seed: SecureBytes(copying: seed)))
        let ours = device.proof(.v2, claims: .node(platform: "ios", deviceFamily: "iPhone"), signedAtMs: 1_763_800_000_123, token: token, nonce: nonce)
        let theirs = try JSONDecoder().decode(JSONValue.self, from: Data(try python(["sign-v2", Hex.encode(seed), nonce, token, "1763800000123"]).utf8))
        #expect(theirs == ours)
    }

    @Test func v3ProofsVerifyWithPyNaCl() throws {
        let device = OpenClawDevice(key: .generate())
        let claims = OpenClawDevice.Claims.node(platform: "Android", deviceFamily: "Pixel")
        let proof = device.proof(.v3, claims: claims, signedAtMs: 42, token: "t", nonce: "n")
        guard case let .string(signature)? = proof["signature"] else { Issue.record("no signature"); return }
        let payload = device.payload(.v3, claims: claims, signedAtMs: 42, token: "t", nonce: "n")
        #expect(try python(["verify", device.publicKey, payload, signature]) == "ok")
        #expect(try python(["verify", device.publicKey, payload + "x", signature]) == "bad")
    }
}
