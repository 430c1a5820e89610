import Foundation
import Testing
import TestSupport

/// The bridge's gateway link against a gateway we did not write: Python `websockets`, coded from
/// pairing/PROTOCOL.md §12 alone.
struct WebSocketInteropTests {
    @Test(.enabled(if: Python.hasModule("websockets"), "needs Python websockets (scripts/setup installs it)"))
    func aPythonWebsocketsGatewayDrivesListDescribeAndInvoke() throws {
        let token = "py-token-\(UUID().uuidString)"
        let directory = TemporaryDirectory("pygateway")
        let tokenFile = directory.url.appendingPathComponent("token").path
        FileManager.default.createFile(atPath: tokenFile, contents: Data(token.utf8), attributes: [.posixPermissions: 0o600])
        let gateway = try ChildProcess(URL(fileURLWithPath: Python.executable),
                                       [Repository.url("Tests/IntegrationTests/python/ws_gateway.py").path, token],
                                       mergeStandardError: true)
        let port = Int(try gateway.waitForLine(timeout: 30) { $0.hasPrefix("listening ") }.dropFirst("listening ".count))!
        let bridge = try BridgeDaemon(arguments: ["--gateway", "ws://127.0.0.1:\(port)", "--gateway-token-file", tokenFile])
        defer { bridge.stop() }
        #expect(try gateway.waitForLine(timeout: 30) { $0.hasPrefix("hello ") } == "hello test-bridge")
        let node = try SimulatedNode(port: bridge.port)
        defer { node.stop() }
        try node.pair(with: bridge)
        let verdict = try gateway.waitForLine(timeout: 60) { $0 == "PASS" || $0.hasPrefix("FAIL") }
        #expect(verdict == "PASS")
        #expect(gateway.wait() == 0)
    }
}
