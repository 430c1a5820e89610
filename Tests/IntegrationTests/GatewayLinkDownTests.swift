import Foundation
import LanbridgeProtocol
import Testing
import TestSupport

/// A link that is down says why, in words, each time the reason changes (issue 50 §4): in `status`
/// and in the journal, and `lanbridge gateway reconnect` dials at once instead of after the backoff.
@Suite(.serialized)
struct GatewayLinkDownTests {
    @Test func theLinkSaysWhyItIsDownAndReconnectDialsAtOnce() throws {
        let port = try Python.freePort()
        let gatewayDirectory = TemporaryDirectory("gateway")
        let token = writeTokenFile("the-right-token-\(UUID().uuidString)\n", in: gatewayDirectory)
        let state = TemporaryDirectory("bridge")
        // A minute between dials: within the 30 s the harness waits, only a reconnect dials again.
        let config = state.url.appendingPathComponent("config.json")
        try Data(#"{"limits": {"gatewayRedialMinMs": 60000, "gatewayRedialMaxMs": 60000}}"#.utf8).write(to: config)
        let bridge = try BridgeDaemon(
            state: state, arguments: ["--gateway", "ws://127.0.0.1:\(port)", "--gateway-token-file", token, "--config", config.path])

        // Nothing listens: said in words, with the next try, and never SwiftNIO's error dump.
        let nothing = "nothing listens on 127.0.0.1:\(port)"
        try bridge.waitForLog("gateway link down: \(nothing)")
        let down = try bridge.waitForRuntime("the link down") { $0.gateway?.hasPrefix("down: ") == true }
        #expect(down.gateway?.contains(nothing) == true && down.gateway?.contains("next try at") == true, "\(down.gateway ?? "")")
        let status = try CLI.run(["status", "--state-dir", state.path]).stdout
        #expect(status.contains(nothing) && !status.contains("SingleConnectionFailure"), "\(status)")

        // A listener with another token: a new reason, so a new warning in the journal.
        let impostorDirectory = TemporaryDirectory("impostor")
        let impostor = try SimulatedGateway(
            port: port, tokenFile: writeTokenFile("another-token\n", in: impostorDirectory), directory: impostorDirectory)
        let first = try CLI.run(["gateway", "reconnect", "--state-dir", state.path])
        #expect(first.status == 0 && first.stdout.contains("Dialling"), "\(first)")
        try bridge.waitForLog("gateway link down: 127.0.0.1:\(port) did not prove it knows the gateway token")
        impostor.stop()

        // The real gateway: reconnect, and the link is up long before the minute is over.
        let gateway = try SimulatedGateway(port: port, tokenFile: token, directory: gatewayDirectory)
        let second = try CLI.run(["gateway", "reconnect", "--json", "--state-dir", state.path])
        #expect(second.status == 0, "\(second)")
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(second.stdout.utf8))["redialled"] == true)
        try gateway.waitFor("bridge connected")
        try bridge.waitForRuntime("the link up") { $0.gateway?.hasPrefix("connected") == true }
        let again = try CLI.run(["gateway", "reconnect", "--state-dir", state.path])
        #expect(again.status == 0 && again.stdout.contains("up; nothing to do"), "\(again)")
        bridge.stop()
    }

    @Test func reconnectWithoutADaemonOrAGatewaySaysSo() throws {
        let state = TemporaryDirectory("bridge")
        let none = try CLI.run(["gateway", "reconnect", "--state-dir", state.path])
        #expect(none.status == 69 && none.stderr.contains("not running"), "\(none)")
        let bridge = try BridgeDaemon(state: state)
        let unlinked = try CLI.run(["gateway", "reconnect", "--state-dir", state.path])
        #expect(unlinked.status == 69 && unlinked.stderr.contains("no gateway is configured"), "\(unlinked)")
        bridge.stop()
    }
}
