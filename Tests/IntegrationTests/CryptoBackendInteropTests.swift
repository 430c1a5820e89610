import Foundation
import LanbridgeCrypto
import Testing
import TestSupport

/// A node built on swift-crypto (the SwiftCrypto trait, as node apps on Apple platforms build)
/// pairs with the libsodium bridge and is invoked through the gateway: the two backends speak the
/// same Noise. scripts/test builds the swift-crypto node-sim into .build/swift-crypto first.
struct CryptoBackendInteropTests {
    static let swiftCryptoNodeSim = Repository.url(".build/swift-crypto/debug/lanbridge-node-sim")

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: swiftCryptoNodeSim.path),
            "needs .build/swift-crypto (scripts/test builds it: swift build --disable-default-traits --traits SwiftCrypto --build-path .build/swift-crypto)"))
    func aSwiftCryptoNodePairsWithTheLibsodiumBridge() throws {
        #expect(CryptoInfo.backend == "libsodium", "the bridge side of this test is the default build")
        // The node-sim build says which backend it has before it connects anywhere.
        let probe = try SimulatedNode(port: 9, executable: Self.swiftCryptoNodeSim)
        #expect(try probe.waitFor("crypto") == "swift-crypto")
        probe.stop()

        let stack = try RelayStack(nodeExecutable: Self.swiftCryptoNodeSim)
        defer { stack.stop() }
        let echo = try stack.gateway.invoke(stack.nodeID, "canvas.navigate", params: ["url": "https://example.com/ü"])
        #expect(echo.ok && echo.payload?["url"] == "https://example.com/ü", "\(echo)")
        let snapshot = try stack.gateway.invoke(stack.nodeID, "canvas.snapshot")
        #expect(snapshot.ok && snapshot.payload?["format"] == "png")
    }
}
