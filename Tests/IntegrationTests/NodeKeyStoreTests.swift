import Foundation
import LanbridgeCrypto
import LanbridgeNode
import LanbridgeProtocol
import Testing
import TestSupport

/// An app's own key store (the seam a Keychain store plugs into), driven by the library in this
/// process against the real daemon: pairing by code saves the pin there and nowhere else.
struct NodeKeyStoreTests {
    final class MemoryKeyStore: NodeKeyStore, @unchecked Sendable {
        private let lock = NSLock()
        private let keys = X25519.KeyPair.generate()
        private var stored: BridgePin?
        func identity() throws -> X25519.KeyPair { keys }
        func pin() throws -> BridgePin? { lock.withLock { stored } }
        func save(_ pin: BridgePin) throws { lock.withLock { stored = pin } }
        func forgetPin() throws { lock.withLock { stored = nil } }
    }

    @Test func aNodeWithItsOwnKeyStorePairsAndPinsThere() async throws {
        let bridge = try BridgeDaemon(arguments: ["--no-gateway"])
        defer { bridge.stop() }
        let store = MemoryKeyStore()
        let unused = TemporaryDirectory("unused").url.appendingPathComponent("never-made")
        var configuration = NodeClient.Configuration(
            stateDirectory: unused,
            details: NodeDetails(displayName: "Memory node", platform: "ios", caps: [], commands: []))
        configuration.keyStore = store
        let client = try NodeClient(configuration: configuration)
        let events = client.events
        let running = Task { try await client.run(host: "127.0.0.1", port: bridge.port) }
        defer { running.cancel() }
        for await event in events {
            if case let .verificationCode(code, requestId) = event {
                let approval = try CLI.run(["nodes", "approve", requestId, "--code", code, "--state-dir", bridge.state.path])
                #expect(approval.status == 0, "\(approval.stderr)")
            }
            if case .connected = event { break }
        }
        let pin = try #require(try store.pin())
        #expect(await client.bridge == pin)
        #expect(client.nodeID == Fingerprint(publicKey: try store.identity().publicKey).description)
        #expect(!FileManager.default.fileExists(atPath: unused.path), "nothing written outside the key store")

        try await client.forgetBridge()
        #expect(try store.pin() == nil)
        await #expect(throws: LanbridgeError.self) { try await client.call("system-event", params: ["text": "x"], timeout: .seconds(5)) }
    }
}
