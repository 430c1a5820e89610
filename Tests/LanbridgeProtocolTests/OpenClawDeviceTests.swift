import LanbridgeCrypto
@testable import LanbridgeProtocol
import Testing

/// The OpenClaw device identity against vectors from implementations we did not write.
struct OpenClawDeviceTests {
    /// The official Rust node-host crate's test (crates/openclaw-node-host/src/identity.rs): seed
    /// [7; 32], platform "Windows", family "Desktop" (normalised in the payload). The values were
    /// computed with Python `cryptography` from that test's inputs; Ed25519 is deterministic.
    @Test func theRustNodeHostVector() throws {
        let device = OpenClawDevice(key: try Ed25519.KeyPair(seed: SecureBytes(copying: [UInt8](repeating: 7, count: 32))))
        #expect(device.publicKey == "6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw")
        #expect(device.deviceId == "fe812c12f3ab4ce6ac5db69ac352f906cb1b11ef43fb33e252ef7ff552263889")
        let claims = OpenClawDevice.Claims.node(platform: "Windows", deviceFamily: "Desktop")
        let payload = device.payload(.v3, claims: claims, signedAtMs: 1_700_000_000_000, token: "test-token", nonce: "nonce-1")
        #expect(payload == "v3|\(device.deviceId)|node-host|node|node||1700000000000|test-token|nonce-1|windows|desktop")
        let proof = device.proof(.v3, claims: claims, signedAtMs: 1_700_000_000_000, token: "test-token", nonce: "nonce-1")
        #expect(proof["signature"] == "hQlcCVP8pt1DiZ7m4E4tvGAcVPgaafC4k-i2u5VJ29KsCtq7XziTCL7FxWol9P0mljI8JSk2GjQ_kzQWjysQAw")
        #expect(proof["id"] == .string(device.deviceId) && proof["nonce"] == "nonce-1" && proof["signedAt"] == .number(1_700_000_000_000))
    }

    @Test func v2LeavesOutPlatformAndFamily() throws {
        let device = OpenClawDevice(key: .generate())
        let payload = device.payload(.v2, claims: .node(platform: "ios", deviceFamily: "iPhone"), signedAtMs: 5, token: "", nonce: "n")
        #expect(payload == "v2|\(device.deviceId)|node-host|node|node||5||n")
    }

    @Test func signaturesVerifyAndTamperingIsRefused() throws {
        let key = Ed25519.KeyPair.generate()
        let message = Array("v3|x".utf8)
        var signature = key.sign(message)
        #expect(Ed25519.verify(signature: signature, of: message, publicKey: key.publicKey))
        #expect(!Ed25519.verify(signature: signature, of: Array("v3|y".utf8), publicKey: key.publicKey))
        signature[0] ^= 1
        #expect(!Ed25519.verify(signature: signature, of: message, publicKey: key.publicKey))
        #expect(!Ed25519.verify(signature: Array(signature.prefix(63)), of: message, publicKey: key.publicKey))
    }

    @Test func normalisingTouchesOnlyASCIILetters() {
        #expect(OpenClawDevice.normalized("  iPhone ") == "iphone")
        #expect(OpenClawDevice.normalized("ÄPFEL") == "Äpfel")
    }

    @Test func base64URLRoundTripsAndReadsStandardBase64() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xfe, 0x00, 0x01]
        #expect(Base64URL.encode(bytes) == "-__-AAE")
        #expect(Base64URL.decode("-__-AAE") == bytes)
        #expect(Base64URL.decode("+//+AAE=") == bytes)
        #expect(Base64URL.decode("!!") == nil)
    }
}
