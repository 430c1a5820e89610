import Foundation
import LanbridgeCrypto
import LanbridgeProtocol
import LanbridgeFiles
import LanbridgeState
import LanbridgeStores
import Testing
import TestSupport

/// What the store writes must match the published schemas, checked by an independent validator.
@Suite(.enabled(if: Python.hasModule("jsonschema"), "needs Python's jsonschema (scripts/test installs it)"))
struct SchemaTests {
    @Test func filesWrittenByTheStoreMatchPairingSchemas() throws {
        let dir = TemporaryDirectory()
        let store = PairingStore(directory: StateDirectory(url: dir.url))
        let now = Date()
        let minimal = NodeDetails(displayName: "Pi", platform: "linux")
        let full = NodeDetails(
            displayName: "Ada's iPhone", platform: "ios", osVersion: "18.1", appVersion: "2.0",
            deviceModel: "iPhone15,2", caps: ["canvas"], commands: ["canvas.present"],
            flags: CapabilityFlags(requiresForeground: true, supportsInputInjection: false))
        try store.update { state in
            for (index, details) in [minimal, full].enumerated() {
                let r = try state.challenge(key: PublicKey(bytes: SecureRandom.bytes(32))!, details: details, source: "10.0.0.2", now: now)
                state.setCode("123456", requestId: r.requestId)
                _ = try state.approve(
                    requestId: r.requestId, code: index == 0 ? "123456" : nil, unverified: index == 1,
                    access: AccessRules(allow: ["canvas.*"]), now: now)
            }
            let locked = try state.challenge(key: PublicKey(bytes: SecureRandom.bytes(32))!, details: full, source: "10.0.0.3", now: now)
            state.commitmentFailed(requestId: locked.requestId)
            let blocked = try state.requestPairing(key: PublicKey(bytes: SecureRandom.bytes(32))!, details: minimal, source: nil, now: now)
            _ = try state.reject(requestId: blocked.requestId, block: true, now: now)
            _ = try state.requestPairing(key: PublicKey(bytes: SecureRandom.bytes(32))!, details: full, source: nil, now: now - 400)
            _ = state.expire(now: now)
            _ = try state.requestPairing(key: PublicKey(bytes: SecureRandom.bytes(32))!, details: full, source: "10.0.0.9", now: now)
            state.pending.requests[0].code = "004217"
        }
        let validator = try ChildProcess(
            URL(fileURLWithPath: Python.executable),
            [Repository.url("Tests/IntegrationTests/python/validate_state.py").path, dir.path])
        var lines: [String] = []
        while let line = try validator.nextLine() { lines.append(line) }
        #expect(validator.wait() == 0, "\(validator.standardError)")
        #expect(lines == ["valid paired.json", "valid pending.json"])
    }
}
