import Foundation
import LanbridgeCrypto
import LanbridgeFiles
import LanbridgeProtocol
@testable import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// openclaw-devices.json: one gateway identity per node, stable, secret, and gone with the pairing.
struct OpenClawDevicesTests {
    let a = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)
    let b = Fingerprint(publicKey: X25519.KeyPair.generate().publicKey)

    @Test func anIdentityIsMadeOnceKeptSecretAndForgottenWithItsNode() throws {
        let dir = TemporaryDirectory()
        let devices = OpenClawDevices(directory: StateDirectory(url: dir.url))
        let (first, record) = try devices.device(for: a, platform: "ios")
        #expect(record.platform == "ios" && record.deviceFamily == "iPhone" && record.deviceToken == nil)
        // The same key, even if the node later claims another platform (the gateway pins both).
        let (again, pinned) = try devices.device(for: a, platform: "android")
        #expect(again.deviceId == first.deviceId && pinned.platform == "ios")
        #expect(try FileManager.default.attributesOfItem(atPath: devices.url.path)[.posixPermissions] as? Int == 0o600)

        try devices.setDeviceToken("tok", for: a)
        #expect(try devices.device(for: a, platform: "ios").1.deviceToken == "tok")
        let (bDevice, _) = try devices.device(for: b, platform: "linux")
        // What went and what stayed, by their device IDs at the gateway (its cleanup needs them).
        let (kept, removed) = try devices.keepOnly([b])
        #expect(kept == [b: bDevice.deviceId] && removed == [a: first.deviceId])
        #expect(try devices.device(for: a, platform: "ios").0.deviceId != first.deviceId, "a's identity was removed; a new one is made")
        try devices.forget(b)
        #expect(!(try String(contentsOf: devices.url, encoding: .utf8)).contains(b.description))
    }

    @Test func aDevicesFileOthersCanReadIsRefused() throws {
        let dir = TemporaryDirectory()
        let devices = OpenClawDevices(directory: StateDirectory(url: dir.url))
        _ = try devices.device(for: a, platform: "ios")
        chmod(devices.url.path, 0o644)
        #expect(throws: StoreError.self) { try devices.device(for: a, platform: "ios") }
    }
}
